package sni_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"testing"

	"github.com/edgeplane/edgeplane/proxy/sni"
)

// echConfigList returns an ECHConfigList (RFC 9849 section 4) with one
// X25519 / HKDF-SHA256 / AES-128-GCM config whose public name is
// publicName.
func echConfigList(t *testing.T, publicName string) []byte {
	t.Helper()
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u16 := func(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
	var c []byte
	c = append(c, 7)   // config_id
	c = u16(c, 0x0020) // KEM: DHKEM(X25519, HKDF-SHA256)
	pub := key.PublicKey().Bytes()
	c = u16(c, len(pub))
	c = append(c, pub...)
	c = u16(c, 4)      // cipher_suites
	c = u16(c, 0x0001) // KDF: HKDF-SHA256
	c = u16(c, 0x0001) // AEAD: AES-128-GCM
	c = append(c, 0)   // maximum_name_length
	c = append(c, byte(len(publicName)))
	c = append(c, publicName...)
	c = u16(c, 0) // extensions
	cfg := u16(u16(nil, 0xfe0d), len(c))
	cfg = append(cfg, c...)
	return append(u16(nil, len(cfg)), cfg...)
}

// TestPeekECH: with Encrypted Client Hello, Peek sees the outer hello: the
// public name, and ECH set.
func TestPeekECH(t *testing.T) {
	client, server := tcpPair(t)
	go tls.Client(client, &tls.Config{
		ServerName:                     "secret.example.com",
		MinVersion:                     tls.VersionTLS13,
		EncryptedClientHelloConfigList: echConfigList(t, "public.example.com"),
	}).Handshake()
	hello, _, err := sni.Peek(context.Background(), server, sni.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if hello.ServerName != "public.example.com" || !hello.ECH {
		t.Errorf("ServerName = %q, ECH = %v; want the public name, true", hello.ServerName, hello.ECH)
	}
}
