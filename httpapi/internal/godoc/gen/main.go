// Command gen writes godoc_gen.go of package httpapi: run it from the
// httpapi directory (go generate does).
package main

import (
	"log"
	"os"

	"github.com/edgeplane/edgeplane/httpapi/internal/godoc"
)

func main() {
	src, err := godoc.Generate("..")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("godoc_gen.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
