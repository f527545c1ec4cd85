package main

import (
	"context"
	"fmt"
	"io"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/apierr"
)

// reportAdminKey bootstraps the store (see [edgeplane.Host.Bootstrap])
// with envKey, EDGEPLANE_API_KEY, and says on w where the admin's API key
// comes from:
//   - an empty store: envKey, or else a key made now and shown once;
//   - a store in use: the key made at its first start. envKey set
//     there is ignored (Bootstrap only applies it to an empty store):
//     when the store does not hold it, every API call with it would be
//     401, so a warning says so and what to run instead.
func reportAdminKey(ctx context.Context, svc *edgeplane.Service, storeSpec, envKey string, w io.Writer) error {
	b, err := svc.Host().Bootstrap(ctx, envKey)
	if err != nil {
		return fmt.Errorf("setting up the store's admin account: %w", err)
	}
	switch {
	case b.Created && envKey != "":
		fmt.Fprintln(w, "admin API key: from EDGEPLANE_API_KEY (the store was empty: it is now the key of the admin of the account \"default\")")
		return nil
	case b.Created:
		fmt.Fprintf(w, "admin API key (shown once): %s (made now: the store was empty and EDGEPLANE_API_KEY is not set; set it before a first start to choose the key)\n", *b.APIKey.Token)
		return nil
	case envKey == "":
		fmt.Fprintln(w, "store in use: its accounts and API keys are kept; the admin's key is the one shown at the store's first start")
		return nil
	}
	_, err = svc.Authenticate(ctx, envKey)
	if err == nil {
		fmt.Fprintln(w, "store in use: its accounts and API keys are kept; EDGEPLANE_API_KEY is one of its keys")
		return nil
	}
	if apierr.CodeOf(err) != apierr.Unauthenticated {
		return fmt.Errorf("checking EDGEPLANE_API_KEY against the store: %w", err)
	}
	fmt.Fprintln(w, "store in use: its accounts and API keys are kept")
	fmt.Fprint(w, staleKeyWarning(storeSpec))
	return nil
}

// staleKeyWarning is what serve says when EDGEPLANE_API_KEY is set but
// the store, in use already, does not hold that key.
func staleKeyWarning(storeSpec string) string {
	s := shellQuote(storeSpec)
	if redact(storeSpec) != storeSpec { // a URL that may carry a password: not printed
		s = "STORE"
	}
	return fmt.Sprintf(`warning: EDGEPLANE_API_KEY is ignored: it only becomes the admin's key on a store's first start, and this store (-store %s) was set up before and does not hold it: every API call with it gets 401.
  Use the admin API key shown at the store's first start, or make a new one:
    edgeplane admin list-accounts -store %s  # ACCOUNT_ID: the account "default" is the store's first
    edgeplane admin create-user -store %s -account ACCOUNT_ID -name me -admin  # prints USER_ID
    edgeplane admin create-api-key -store %s -account ACCOUNT_ID -owner USER_ID
  or start on a new store (another -store) to make EDGEPLANE_API_KEY its admin's key.
`, s, s, s, s)
}
