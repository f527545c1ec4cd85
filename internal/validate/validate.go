// Package validate runs struct-tag validation of request parameters with
// github.com/go-playground/validator/v10 and turns its failures into
// [apierr.Violation]s that name each field by its JSON path.
//
// Besides the validator's built-in tags it registers:
//
//	maxbytes=N   the string is at most N bytes long (len(s)); the built-in
//	             max counts runes, which is wrong for the spec's byte limits
//	maxrunes=N   the string has at most N characters (runes)
//	httpurl      an absolute http or https URL with a host
//	httpsurl     an absolute https URL with a host
//
// The validator instance is built once, on first use, and never changes
// afterwards; it is a cache, not mutable state.
package validate

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/go-playground/validator/v10"
)

var instance = sync.OnceValue(func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			return ""
		case "":
			return f.Name
		}
		return name
	})
	must(v.RegisterValidation("maxbytes", func(fl validator.FieldLevel) bool {
		n, err := strconv.Atoi(fl.Param())
		return err == nil && len(fl.Field().String()) <= n
	}))
	must(v.RegisterValidation("maxrunes", func(fl validator.FieldLevel) bool {
		n, err := strconv.Atoi(fl.Param())
		return err == nil && utf8.RuneCountInString(fl.Field().String()) <= n
	}))
	must(v.RegisterValidation("httpurl", func(fl validator.FieldLevel) bool {
		return isURL(fl.Field().String(), "http", "https")
	}))
	must(v.RegisterValidation("httpsurl", func(fl validator.FieldLevel) bool {
		return isURL(fl.Field().String(), "https")
	}))
	return v
})

func must(err error) {
	if err != nil {
		panic(err) // only on a programming error in this file
	}
}

func isURL(s string, schemes ...string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	for _, sc := range schemes {
		if u.Scheme == sc {
			return true
		}
	}
	return false
}

// Struct validates the exported fields of the struct v by their `validate`
// tags. It returns nil or an InvalidArgument [*apierr.Error] listing every
// violation, each field named by its JSON path (for example "acl[2]").
func Struct(v any) error {
	var vs apierr.Violations
	Into(&vs, "", v)
	return vs.Err()
}

// Into validates v like [Struct] and appends the violations to vs, each
// field path prefixed with prefix.
func Into(vs *apierr.Violations, prefix string, v any) {
	err := instance().Struct(v)
	if err == nil {
		return
	}
	var fes validator.ValidationErrors
	if !errors.As(err, &fes) {
		// InvalidValidationError: a programming error (nil or non-struct).
		vs.Add(prefix, "cannot be validated")
		return
	}
	for _, fe := range fes {
		vs.Add(apierr.JoinPath(prefix, fieldPath(fe)), "%s", Reason(fe.Tag(), fe.Param(), fe.Value()))
	}
}

// fieldPath drops the top-level struct name from the validator namespace:
// "CreateParams.acl[2]" becomes "acl[2]".
func fieldPath(fe validator.FieldError) string {
	ns := fe.Namespace()
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
}

// Reason returns the lowercase message for a failed tag.
func Reason(tag, param string, value any) string {
	switch tag {
	case "required":
		return "is required"
	case "maxbytes":
		return fmt.Sprintf("must be at most %s bytes, got %d", param, lenOf(value))
	case "maxrunes":
		return fmt.Sprintf("must be at most %s characters, got %d", param, runesOf(value))
	case "max":
		if _, ok := value.(string); ok {
			return fmt.Sprintf("must be at most %s characters", param)
		}
		return "must be at most " + param + countNoun(value)
	case "min":
		if _, ok := value.(string); ok {
			return fmt.Sprintf("must be at least %s characters", param)
		}
		return "must be at least " + param + countNoun(value)
	case "oneof":
		return "must be one of: " + strings.Join(strings.Fields(param), ", ")
	case "httpurl":
		return "must be an absolute http or https URL"
	case "httpsurl":
		return "must be an absolute https URL"
	case "lte":
		return "must be at most " + param
	case "gte":
		return "must be at least " + param
	case "unique":
		return "must not contain duplicates"
	}
	return "does not satisfy " + tag
}

func countNoun(v any) string {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return " elements"
	}
	return ""
}

func lenOf(v any) int {
	s, _ := v.(string)
	return len(s)
}

func runesOf(v any) int {
	s, _ := v.(string)
	return utf8.RuneCountInString(s)
}
