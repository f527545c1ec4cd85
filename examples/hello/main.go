// Command hello is the smallest local app to give a public URL: an HTTP
// server on loopback that answers every request with one line naming
// its method and path. The README's "Try it" block runs it behind an
// agent.
//
//	go run ./examples/hello [-addr 127.0.0.1:3000]
//
// It prints "hello on http://<addr>" when it listens and serves until it
// is stopped, with the timeouts and request bounds of package
// httpserver's defaults.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/edgeplane/edgeplane/httpserver"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3000", "the address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
	fmt.Printf("hello on http://%s\n", ln.Addr())
	srv := httpserver.New(handler(), httpserver.Options{})
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

// handler answers every request with "hello from the local app: METHOD
// PATH".
func handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "hello from the local app: %s %s\n", r.Method, r.URL.Path)
	})
}
