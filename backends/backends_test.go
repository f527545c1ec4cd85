package backends_test

import (
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/credentials"
	"github.com/google/go-cmp/cmp"
)

// labelsOf returns n distinct valid labels.
func labelsOf(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m["k"+strings.Repeat("x", i)] = "v"
	}
	return m
}

func TestValidateLabels(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   []apierr.Violation // nil: valid
	}{
		{name: "nil", labels: nil},
		{name: "empty", labels: map[string]string{}},
		{name: "simple", labels: map[string]string{"env": "prod"}},
		{name: "every allowed character", labels: map[string]string{"app.kubernetes.io/name_x-y:z": "A-z_0.9/:"}},
		{name: "key at limit", labels: map[string]string{strings.Repeat("k", 63): "v"}},
		{name: "value at limit", labels: map[string]string{"k": strings.Repeat("v", 255)}},
		{name: "at most 32 labels", labels: labelsOf(32)},
		{name: "too many labels", labels: labelsOf(33),
			want: []apierr.Violation{{Field: "labels", Reason: "must have at most 32 labels, got 33"}}},
		{name: "empty key", labels: map[string]string{"": "v"},
			want: []apierr.Violation{{Field: `labels[""]`, Reason: "label key must not be empty"}}},
		{name: "empty value", labels: map[string]string{"k": ""},
			want: []apierr.Violation{{Field: `labels["k"]`, Reason: "label value must not be empty"}}},
		{name: "key too long", labels: map[string]string{strings.Repeat("k", 64): "v"},
			want: []apierr.Violation{{Field: `labels["` + strings.Repeat("k", 64) + `"]`, Reason: "label key must be at most 63 bytes, got 64"}}},
		{name: "value too long", labels: map[string]string{"k": strings.Repeat("v", 256)},
			want: []apierr.Violation{{Field: `labels["k"]`, Reason: "label value must be at most 255 bytes, got 256"}}},
		{name: "multibyte value counts bytes", labels: map[string]string{"k": strings.Repeat("é", 128)},
			want: []apierr.Violation{{Field: `labels["k"]`, Reason: "label value must be at most 255 bytes, got 256"}}},
		{name: "space in key", labels: map[string]string{"a b": "v"},
			want: []apierr.Violation{{Field: `labels["a b"]`, Reason: "label key may contain only letters, digits and . _ - / :"}}},
		{name: "equals in value", labels: map[string]string{"k": "a=b"},
			want: []apierr.Violation{{Field: `labels["k"]`, Reason: "label value may contain only letters, digits and . _ - / :"}}},
		{name: "wildcard key", labels: map[string]string{"*": "v"},
			want: []apierr.Violation{{Field: `labels["*"]`, Reason: "label key may contain only letters, digits and . _ - / :"}}},
		{name: "control character is quoted in the path", labels: map[string]string{"a\nb": "v"},
			want: []apierr.Violation{{Field: `labels["a\nb"]`, Reason: "label key may contain only letters, digits and . _ - / :"}}},
		{name: "non-ASCII", labels: map[string]string{"k": "ü"},
			want: []apierr.Violation{{Field: `labels["k"]`, Reason: "label value may contain only letters, digits and . _ - / :"}}},
		{name: "huge key is shortened in the path", labels: map[string]string{strings.Repeat("k", 1000): "v"},
			want: []apierr.Violation{{Field: `labels["` + strings.Repeat("k", 80) + `"...]`, Reason: "label key must be at most 63 bytes, got 1000"}}},
		{name: "key and value both bad, every label reported, sorted by key",
			labels: map[string]string{"z z": "ok", "a": "", "m": "fine", "": "!"},
			want: []apierr.Violation{
				{Field: `labels[""]`, Reason: "label key must not be empty"},
				{Field: `labels[""]`, Reason: "label value may contain only letters, digits and . _ - / :"},
				{Field: `labels["a"]`, Reason: "label value must not be empty"},
				{Field: `labels["z z"]`, Reason: "label key may contain only letters, digits and . _ - / :"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := backends.ValidateLabels(tc.labels)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateLabels = %v, want nil", err)
				}
				return
			}
			if apierr.CodeOf(err) != apierr.InvalidArgument {
				t.Fatalf("ValidateLabels = %v, want invalid argument", err)
			}
			if diff := cmp.Diff(tc.want, apierr.ViolationsOf(err)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateParamsValidate(t *testing.T) {
	tests := []struct {
		name   string
		params backends.CreateParams
		fields []string // violated fields; nil: valid
	}{
		{name: "minimal", params: backends.CreateParams{Labels: map[string]string{"env": "prod"}}},
		{name: "limits", params: backends.CreateParams{Description: strings.Repeat("d", 255), Metadata: strings.Repeat("m", 4096), Labels: map[string]string{"env": "prod"}}},
		{name: "no labels", params: backends.CreateParams{}, fields: []string{"labels"}},
		{name: "empty labels", params: backends.CreateParams{Labels: map[string]string{}}, fields: []string{"labels"}},
		{name: "everything wrong", params: backends.CreateParams{Description: strings.Repeat("é", 128), Metadata: strings.Repeat("m", 4097), Labels: map[string]string{"k": ""}},
			fields: []string{"description", "metadata", `labels["k"]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkFields(t, tc.params.Validate(), tc.fields)
		})
	}
}

func TestUpdateParams(t *testing.T) {
	empty := map[string]string{}
	tests := []struct {
		name   string
		params backends.UpdateParams
		fields []string
	}{
		{name: "nothing", params: backends.UpdateParams{}},
		{name: "clear description", params: backends.UpdateParams{Description: new(string)}},
		{name: "empty labels", params: backends.UpdateParams{Labels: &empty}, fields: []string{"labels"}},
		{name: "bad label and metadata", params: backends.UpdateParams{Metadata: ptr(strings.Repeat("m", 4097)), Labels: &map[string]string{"k/": "="}},
			fields: []string{"metadata", `labels["k/"]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkFields(t, tc.params.Validate(), tc.fields)
		})
	}

	labels := map[string]string{"a": "1"}
	b := backends.TunnelGroupBackend{Description: "d", Metadata: "m", Labels: map[string]string{"x": "y"}}
	backends.UpdateParams{Description: ptr(""), Labels: &labels}.Apply(&b)
	labels["a"] = "changed" // the backend holds a copy
	want := backends.TunnelGroupBackend{Description: "", Metadata: "m", Labels: map[string]string{"a": "1"}}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("Apply (-want +got):\n%s", diff)
	}
}

func TestRegisterTunnelParams(t *testing.T) {
	if err := (backends.RegisterTunnelParams{}).Validate(); err != nil {
		t.Errorf("a tunnel without labels: %v", err)
	}
	checkFields(t, backends.RegisterTunnelParams{Labels: map[string]string{"k": "a b"}}.Validate(), []string{`labels["k"]`})
	in := map[string]string{"a": "1"}
	tn := backends.RegisterTunnelParams{Labels: in}.Tunnel()
	in["a"] = "2"
	if tn.Labels["a"] != "1" {
		t.Error("Tunnel shares the params' map")
	}
	if (backends.RegisterTunnelParams{}).Tunnel().Labels == nil {
		t.Error("Tunnel().Labels is nil without labels")
	}
}

func TestSelects(t *testing.T) {
	tests := []struct {
		name       string
		want, have map[string]string
		selects    bool
	}{
		{"exact", map[string]string{"env": "prod"}, map[string]string{"env": "prod"}, true},
		{"subset", map[string]string{"env": "prod"}, map[string]string{"env": "prod", "region": "eu"}, true},
		{"all of several", map[string]string{"env": "prod", "region": "eu"}, map[string]string{"region": "eu", "env": "prod", "x": "y"}, true},
		{"value differs", map[string]string{"env": "prod"}, map[string]string{"env": "dev"}, false},
		{"one missing", map[string]string{"env": "prod", "region": "eu"}, map[string]string{"env": "prod"}, false},
		{"case-sensitive value", map[string]string{"env": "prod"}, map[string]string{"env": "Prod"}, false},
		{"case-sensitive key", map[string]string{"env": "prod"}, map[string]string{"Env": "prod"}, false},
		{"tunnel without labels", map[string]string{"env": "prod"}, nil, false},
		{"backend without labels selects nothing", nil, map[string]string{"env": "prod"}, false},
		{"both empty", map[string]string{}, map[string]string{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := backends.Selects(tc.want, tc.have); got != tc.selects {
				t.Errorf("Selects(%v, %v) = %v, want %v", tc.want, tc.have, got, tc.selects)
			}
		})
	}
}

// FuzzValidateLabels checks that validation never panics, that accepted
// labels keep the documented rules, and that every accepted label is one a
// credential's label rule can permit.
func FuzzValidateLabels(f *testing.F) {
	f.Add("env", "prod", "k2", "v2")
	f.Add("", "", "a b", "c=d")
	f.Add("app.io/name", "x:y", "*", "*")
	f.Add(strings.Repeat("k", 64), strings.Repeat("v", 256), "ü", "\x00")
	anyLabel, err := credentials.ParseACL([]string{"bind:*=*"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		labels := map[string]string{k1: v1, k2: v2}
		err := backends.ValidateLabels(labels)
		if err == nil {
			for k, v := range labels {
				if k == "" || v == "" || len(k) > backends.MaxLabelKeyBytes || len(v) > backends.MaxLabelValueBytes {
					t.Fatalf("accepted %q=%q", k, v)
				}
			}
			if !anyLabel.AllowsLabels(labels) {
				t.Fatalf("accepted labels %q that no label rule can permit", labels)
			}
			return
		}
		if apierr.CodeOf(err) != apierr.InvalidArgument || len(apierr.ViolationsOf(err)) == 0 {
			t.Fatalf("error %v is not a validation error", err)
		}
		for _, v := range apierr.ViolationsOf(err) {
			if !strings.HasPrefix(v.Field, `labels["`) || v.Reason == "" {
				t.Fatalf("violation %+v", v)
			}
		}
	})
}

func checkFields(t *testing.T, err error, fields []string) {
	t.Helper()
	var got []string
	for _, v := range apierr.ViolationsOf(err) {
		got = append(got, v.Field)
	}
	if fields == nil && err != nil {
		t.Fatalf("Validate = %v, want nil", err)
	}
	if diff := cmp.Diff(fields, got); diff != "" {
		t.Errorf("violated fields (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }
