package domains_test

import (
	"testing"

	"github.com/edgeplane/edgeplane/domains"
)

func BenchmarkParseName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := domains.ParseName("*.Build-42.CI.example.com."); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCovers(b *testing.B) {
	sans := []string{"example.com", "www.example.com", "api.example.com", "*.apps.example.com"}
	b.ReportAllocs()
	for b.Loop() {
		if !domains.Covers(sans, "shop.apps.example.com") {
			b.Fatal("not covered")
		}
	}
}
