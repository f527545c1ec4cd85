package acmedns_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/miekg/dns"

	"github.com/edgeplane/edgeplane/acmedns"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/domains"
)

// challenges is a Host of one pending DNS-01 challenge: all a Server asks
// of the Service (package edgeplane's Host implements it over the store).
type challenges map[string]string

func (c challenges) ACMEChallenge(_ context.Context, typ, name, _ string) (*domains.ACMEChallenge, error) {
	v, ok := c[name]
	if !ok || typ != domains.ChallengeDNS01 {
		return nil, apierr.New(apierr.NotFound, "no challenge for %s", name)
	}
	return &domains.ACMEChallenge{Type: typ, Name: name, KeyAuthorization: v, ExpiresAt: time.Now().Add(time.Hour)}, nil
}

// A Server wired to a fake of its Host answers the TXT record of a
// pending challenge, and NXDOMAIN for a name of its zone with none.
func Example() {
	s, err := acmedns.New(acmedns.Options{Host: challenges{"abc.acme.example.net": "digest-of-the-key-authorization"},
		Zones: []string{"acme.example.net"}})
	if err != nil {
		log.Fatal(err)
	}
	addr, err := s.Listen("127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	for _, name := range []string{"abc.acme.example.net.", "other.acme.example.net."} {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeTXT)
		in, _, err := c.Exchange(q, addr)
		if err != nil {
			log.Fatal(err)
		}
		if len(in.Answer) > 0 {
			fmt.Println(name, dns.RcodeToString[in.Rcode], in.Answer[0].(*dns.TXT).Txt)
		} else {
			fmt.Println(name, dns.RcodeToString[in.Rcode])
		}
	}
	// Output:
	// abc.acme.example.net. NOERROR [digest-of-the-key-authorization]
	// other.acme.example.net. NXDOMAIN
}
