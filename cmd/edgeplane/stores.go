package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
)

// defaultStore is the -store of a fresh install.
const defaultStore = "memory:"

// storeHelp describes the -store values this build knows.
const storeHelp = "the store: memory: (in this process only)"

// openStore opens the store spec names and returns it with its closer.
func openStore(_ context.Context, spec string) (store.Store, func() error, error) {
	switch {
	case spec == "memory:":
		return memstore.New(), func() error { return nil }, nil
	}
	return nil, nil, usageError{fmt.Sprintf("-store %q: want %s", spec, strings.TrimPrefix(storeHelp, "the store: "))}
}

// sealingKey returns the sealing key: EDGEPLANE_SEAL_KEY (standard base64
// of 32 bytes) or, for a memory: store, a new key printed once.
func sealingKey(spec string, getenv func(string) string, stdout io.Writer) ([]byte, error) {
	if env := getenv("EDGEPLANE_SEAL_KEY"); env != "" {
		key, err := base64.StdEncoding.DecodeString(env)
		if err != nil || len(key) != edgeplane.SealingKeySize {
			return nil, fmt.Errorf("EDGEPLANE_SEAL_KEY: want the standard base64 of %d bytes", edgeplane.SealingKeySize)
		}
		return key, nil
	}
	if spec != "memory:" {
		return nil, fmt.Errorf("EDGEPLANE_SEAL_KEY is required with -store %s: the key that seals certificate private keys at rest", spec)
	}
	key := make([]byte, edgeplane.SealingKeySize)
	rand.Read(key)
	fmt.Fprintf(stdout, "sealing key (shown once; set EDGEPLANE_SEAL_KEY to it to keep sealed secrets readable): %s\n",
		base64.StdEncoding.EncodeToString(key))
	return key, nil
}
