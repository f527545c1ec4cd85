package backends_test

import (
	"fmt"

	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
)

// Labels are checked all at once; each violation names its label.
func ExampleValidateLabels() {
	err := backends.ValidateLabels(map[string]string{"env": "prod", "team name": "edge", "tier": ""})
	for _, v := range apierr.ViolationsOf(err) {
		fmt.Println(v)
	}
	// Output:
	// labels["team name"]: label key may contain only letters, digits and . _ - / :
	// labels["tier"]: label value must not be empty
}

// A backend selects the tunnels that carry all of its labels.
func ExampleSelects() {
	backend := map[string]string{"env": "prod", "app": "api"}
	fmt.Println(backends.Selects(backend, map[string]string{"env": "prod", "app": "api", "region": "eu"}))
	fmt.Println(backends.Selects(backend, map[string]string{"env": "prod"}))
	// Output:
	// true
	// false
}
