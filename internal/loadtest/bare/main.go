// Command bare is the reference of the load harness (../run): a bare
// net/http server that answers the management API's credential endpoints
// with fixed bodies captured from a real edgeplane server, so that the
// harness can compare edgeplane's throughput with what net/http itself
// reaches on the same machine.
//
//	bare -addr 127.0.0.1:9000 -dir captured/
//
// dir holds get.json (GET and PATCH /credentials/{id}), list.json (GET
// /credentials) and post.json (POST /credentials).
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "listen address")
	dir := flag.String("dir", ".", "directory of get.json, list.json and post.json")
	flag.Parse()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(*dir, name))
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	get, list, post := read("get.json"), read("list.json"), read("post.json")
	answer := func(body []byte, code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				http.Error(w, "unauthenticated", http.StatusUnauthorized)
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write(body)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /credentials/{id}", answer(get, http.StatusOK))
	mux.HandleFunc("PATCH /credentials/{id}", answer(get, http.StatusOK))
	mux.HandleFunc("GET /credentials", answer(list, http.StatusOK))
	mux.HandleFunc("POST /credentials", answer(post, http.StatusCreated))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	log.Printf("listening on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
