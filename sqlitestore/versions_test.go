package sqlitestore

import (
	"strconv"
	"testing"

	"github.com/edgeplane/edgeplane/store"
	"github.com/google/go-cmp/cmp"
)

// appendVersion appends v as versionsSQL's row writes it.
func appendVersion(list string, v store.Version) string {
	if list != "" {
		list += ";"
	}
	return list + strconv.Itoa(len(v.ID)) + ":" + v.ID + strconv.FormatInt(v.Version, 10)
}

// TestParseVersions: the lists versionsSQL's rows hold parse back to
// their versions, IDs holding the separators included; malformed ones
// are refused.
func TestParseVersions(t *testing.T) {
	want := []store.Version{{ID: "st_1", Version: 7}, {ID: "a:b;12", Version: 123456789012}, {ID: "", Version: 1}, {ID: "é", Version: 2}}
	list := ""
	for _, v := range want {
		list = appendVersion(list, v)
	}
	got, err := parseVersions(list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parse of %q (-want +got):\n%s", list, diff)
	}
	if got, err := parseVersions("", nil); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
	for _, bad := range []string{"x", "4:st_1", "9:st_17", "4:st_1x", "-1:7", "4st_17", "4:st_17;"} {
		if got, err := parseVersions(bad, nil); err == nil {
			t.Errorf("parseVersions(%q) = %v, want an error", bad, got)
		}
	}
}

// FuzzParseVersions: any input parses or is refused, without a panic;
// a list made of versions parses back to them.
func FuzzParseVersions(f *testing.F) {
	f.Add("4:st_17;3:a;b9", "st_1", int64(5))
	f.Add("", ":;", int64(-3))
	f.Fuzz(func(t *testing.T, list, id string, version int64) {
		_, _ = parseVersions(list, nil)
		v := store.Version{ID: id, Version: version}
		made := appendVersion(appendVersion("", v), v)
		got, err := parseVersions(made, nil)
		if err != nil || len(got) != 2 || got[0] != v || got[1] != v {
			t.Fatalf("parse of %q: %v, %v", made, got, err)
		}
	})
}
