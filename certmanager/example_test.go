package certmanager_test

import (
	"context"
	"fmt"
	"log"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/certmanager"
	"github.com/edgeplane/edgeplane/memstore"
)

// A Manager is made from the Service's Host; a pass orders a certificate
// for every domain that is due (here none: the store is empty, and the
// CA is not contacted). A server runs m.Run under a lease instead.
func ExampleManager() {
	ctx := context.Background()
	svc, err := edgeplane.New(memstore.New(), edgeplane.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close(ctx)
	m, err := certmanager.New(certmanager.Options{Host: svc.Host().Certificates(), Directory: certmanager.LetsEncryptStaging, Email: "ops@example.com"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Pass(ctx)
	fmt.Printf("issued %d, failed %d, %v\n", res.Issued, res.Failed, err)
	_, err = certmanager.New(certmanager.Options{Host: svc.Host().Certificates(), Directory: "ftp://ca.example/dir"})
	fmt.Println(err)
	// Output:
	// issued 0, failed 0, <nil>
	// certmanager: Options.Directory "ftp://ca.example/dir": want an absolute https URL
}
