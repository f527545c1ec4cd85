package httpapi_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane/domains"
)

// rd is the expected wire shape of a reserved domain (SPEC 2.4). Nil
// fields are null.
type rd struct {
	id, domain, description, metadata, region string
	cname, certificate, policy, status, acme  any
	http, https                               any
}

func (d rd) String() string {
	b, err := json.Marshal(map[string]any{
		"id": d.id, "uri": base + "/reserved_domains/" + d.id, "created_at": t0,
		"description": d.description, "metadata": d.metadata,
		"domain": d.domain, "region": d.region,
		"cname_target":                  d.cname,
		"certificate":                   d.certificate,
		"certificate_management_policy": d.policy,
		"certificate_management_status": d.status,
		"acme_challenge_cname_target":   d.acme,
		"http_endpoint_configuration":   d.http,
		"https_endpoint_configuration":  d.https,
		"error_redirect_url":            nil,
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ref is the expected wire shape of a Ref (SPEC 2.1): id and absolute uri.
func ref(collection, id string) map[string]any {
	return map[string]any{"id": id, "uri": base + "/" + collection + "/" + id}
}

// pendingStatus is the status of a provisioning job that has just
// started: nothing failed, no retry, no renewal yet (SPEC 2.4).
func pendingStatus(msg string) map[string]any {
	return map[string]any{"renews_at": nil, "provisioning_job": map[string]any{
		"error_code": nil, "msg": msg, "started_at": t0, "retries_at": nil}}
}

var cnameRe = regexp.MustCompile(`^[a-z2-7]{26}\.edgeplane-cname\.com$`)

// cnameOf returns the cname_target of a reserved domain answer, checked
// against the documented form "<26 base32 characters>.<CNAME base>".
func cnameOf(t *testing.T, r response) string {
	t.Helper()
	c, _ := r.json["cname_target"].(string)
	if !cnameRe.MatchString(c) {
		t.Fatalf("cname_target %v, want <26 lowercase base32>.edgeplane-cname.com; body %s", r.json["cname_target"], r.body)
	}
	return c
}

// jobMsg returns the msg of the provisioning job of a reserved domain
// answer, which must name the DNS record the user needs (mention).
func jobMsg(t *testing.T, r response, mention string) string {
	t.Helper()
	st, _ := r.json["certificate_management_status"].(map[string]any)
	job, _ := st["provisioning_job"].(map[string]any)
	msg, _ := job["msg"].(string)
	if !strings.Contains(msg, mention) {
		t.Errorf("provisioning_job.msg %q does not mention %q", msg, mention)
	}
	return msg
}

// Reserved domains over HTTP (SPEC 4.3): create, get, list, patch and
// delete with every null the spec calls for.
func TestE2EReservedDomains(t *testing.T) {
	s := newE2E(t)

	// A custom domain: a CNAME target, every optional value null, region
	// "" when none is given (decision of the domains package).
	r := call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"App.Example.COM.","description":"shop","metadata":"{\"k\":1}"}`)
	id := wantID(t, r.json["id"], "rd_")
	cname := cnameOf(t, r)
	app := rd{id: id, domain: "app.example.com", description: "shop", metadata: `{"k":1}`, cname: cname}
	exact(t, r, 201, app.String())
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, app.String())

	// A subdomain of the service-owned base has a null cname_target.
	r = call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"demo.edgeplane.app","region":"eu"}`)
	demoID := wantID(t, r.json["id"], "rd_")
	demo := rd{id: demoID, domain: "demo.edgeplane.app", region: "eu"}
	exact(t, r, 201, demo.String())

	exact(t, call(t, s, "GET", "/reserved_domains", s.keyA, ""), 200,
		`{"reserved_domains": [`+demo.String()+`,`+app.String()+`], "uri": "`+base+`/reserved_domains", "next_page_uri": null}`)

	// PATCH changes only the fields present.
	app.description, app.metadata = "store", ""
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"description":"store","metadata":""}`), 200, app.String())
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{}`), 200, app.String())
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"description":null}`), 200, app.String())

	// domain and region cannot change (decision of the domains package).
	before := snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"domain":"other.example.com"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"domain"}})
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"region":"us"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"region"}})
	unchanged(t, s, s.keyA, before)

	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+id, s.keyA, ""))
	checkError(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound, msg: []string{id}})
	checkError(t, call(t, s, "DELETE", "/reserved_domains/"+id, s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "DELETE", "/reserved_domains/"+id+"/certificate", s.keyA, ""), apiError{status: 404, code: errNotFound})
	checkError(t, call(t, s, "DELETE", "/reserved_domains/"+id+"/certificate_management_policy", s.keyA, ""), apiError{status: 404, code: errNotFound})
	exact(t, call(t, s, "GET", "/reserved_domains", s.keyA, ""), 200,
		`{"reserved_domains": [`+demo.String()+`], "uri": "`+base+`/reserved_domains", "next_page_uri": null}`)
}

// Certificate management policy: defaults, the status of a new job, the
// ACME challenge target only for wildcard custom domains, and the detach
// operation answering 204 with the three fields null afterwards.
func TestE2EReservedDomainCertificateManagement(t *testing.T) {
	s := newE2E(t)

	// Wildcard custom domain: acme_challenge_cname_target is
	// "<label>.acme.<CNAME base>" for cname_target "<label>.<CNAME base>".
	r := call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"*.wild.example.com","certificate_management_policy":{"authority":"letsencrypt"}}`)
	wild := wantID(t, r.json["id"], "rd_")
	cname := cnameOf(t, r)
	label, _, _ := strings.Cut(cname, ".")
	acme := label + ".acme.edgeplane-cname.com"
	w := rd{id: wild, domain: "*.wild.example.com", cname: cname, acme: acme,
		policy: map[string]any{"authority": "letsencrypt", "private_key_type": "rsa"},
		status: pendingStatus(jobMsg(t, r, acme))}
	exact(t, r, 201, w.String())
	exact(t, call(t, s, "GET", "/reserved_domains/"+wild, s.keyA, ""), 200, w.String())

	// Non-wildcard domain: acme_challenge_cname_target stays null.
	r = call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"api.example.com","certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"}}`)
	plain := wantID(t, r.json["id"], "rd_")
	pc := cnameOf(t, r)
	p := rd{id: plain, domain: "api.example.com", cname: pc,
		policy: map[string]any{"authority": "letsencrypt", "private_key_type": "ecdsa"},
		status: pendingStatus(jobMsg(t, r, pc))}
	exact(t, r, 201, p.String())

	// Wildcard service-owned subdomain: no CNAME, no ACME target.
	r = call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"*.team.edgeplane.app","certificate_management_policy":{"authority":"letsencrypt"}}`)
	owned := wantID(t, r.json["id"], "rd_")
	o := rd{id: owned, domain: "*.team.edgeplane.app",
		policy: map[string]any{"authority": "letsencrypt", "private_key_type": "rsa"},
		status: pendingStatus(jobMsg(t, r, ""))}
	exact(t, r, 201, o.String())

	// Detaching the policy: 204, then policy, status and ACME target null.
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+wild+"/certificate_management_policy", s.keyA, ""))
	w.policy, w.status, w.acme = nil, nil, nil
	exact(t, call(t, s, "GET", "/reserved_domains/"+wild, s.keyA, ""), 200, w.String())
	// Detaching again is harmless.
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+wild+"/certificate_management_policy", s.keyA, ""))
	exact(t, call(t, s, "GET", "/reserved_domains/"+wild, s.keyA, ""), 200, w.String())

	// Setting a policy by PATCH starts provisioning again.
	r = call(t, s, "PATCH", "/reserved_domains/"+wild, s.keyA, `{"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"}}`)
	w.policy = map[string]any{"authority": "letsencrypt", "private_key_type": "ecdsa"}
	w.acme = acme
	w.status = pendingStatus(jobMsg(t, r, acme))
	exact(t, r, 200, w.String())

	// Invalid policies: authority and private_key_type enums, authority
	// required.
	before := snapshot(t, s, s.keyA)
	for _, tc := range []struct{ body, field string }{
		{`{"domain":"x.example.com","certificate_management_policy":{"authority":"zerossl"}}`, "certificate_management_policy.authority"},
		{`{"domain":"x.example.com","certificate_management_policy":{}}`, "certificate_management_policy.authority"},
		{`{"domain":"x.example.com","certificate_management_policy":{"authority":"letsencrypt","private_key_type":"dsa"}}`, "certificate_management_policy.private_key_type"},
	} {
		checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, tc.body), apiError{status: 400, code: errInvalid, fields: []string{tc.field}})
	}
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+plain, s.keyA, `{"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ed25519"}}`),
		apiError{status: 400, code: errInvalid, fields: []string{"certificate_management_policy.private_key_type"}})
	unchanged(t, s, s.keyA, before)
}

// Certificates by ID: upload through /tls_certificates, attach on create
// and by PATCH, the certificate Ref, the detach operation, coverage,
// mutual exclusion with the policy naming both fields, and the
// certificate in use.
func TestE2EReservedDomainCertificate(t *testing.T) {
	s := newE2E(t)
	cert := uploadCert(t, s, s.keyA, "shop.example.com", "www.example.com")

	r := call(t, s, "POST", "/reserved_domains", s.keyA, fill(`{"domain":"shop.example.com","certificate_id":"{{c}}"}`, "c", cert))
	shop := wantID(t, r.json["id"], "rd_")
	d := rd{id: shop, domain: "shop.example.com", cname: cnameOf(t, r), certificate: ref("tls_certificates", cert)}
	exact(t, r, 201, d.String())
	exact(t, call(t, s, "GET", "/reserved_domains/"+shop, s.keyA, ""), 200, d.String())

	// The certificate is in use: deleting it is a conflict naming the
	// domain.
	checkError(t, call(t, s, "DELETE", "/tls_certificates/"+cert, s.keyA, ""),
		apiError{status: 409, code: errConflict, msg: []string{shop}})

	// Detach: 204, certificate null afterwards; the certificate remains.
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+shop+"/certificate", s.keyA, ""))
	d.certificate = nil
	exact(t, call(t, s, "GET", "/reserved_domains/"+shop, s.keyA, ""), 200, d.String())
	if r := call(t, s, "GET", "/tls_certificates/"+cert, s.keyA, ""); r.status != 200 {
		t.Errorf("the detached certificate is gone: %d %s", r.status, r.body)
	}

	// A policy, then a certificate by PATCH: the certificate turns
	// management off.
	r = call(t, s, "PATCH", "/reserved_domains/"+shop, s.keyA, `{"certificate_management_policy":{"authority":"letsencrypt"}}`)
	if r.status != 200 || r.json["certificate_management_policy"] == nil {
		t.Fatalf("set policy: %d %s", r.status, r.body)
	}
	d.certificate = ref("tls_certificates", cert)
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+shop, s.keyA, fill(`{"certificate_id":"{{c}}"}`, "c", cert)), 200, d.String())
	// certificate_id "" detaches, like the detach operation.
	d.certificate = nil
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+shop, s.keyA, `{"certificate_id":""}`), 200, d.String())
	noContent(t, call(t, s, "DELETE", "/tls_certificates/"+cert, s.keyA, ""))

	// Mutual exclusion, on create and on update: one violation of each
	// field.
	other := uploadCert(t, s, s.keyA, "*.example.com")
	before := snapshot(t, s, s.keyA)
	both := apiError{status: 400, code: errInvalid, fields: []string{"certificate_id", "certificate_management_policy"}}
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA,
		fill(`{"domain":"a.example.com","certificate_id":"{{c}}","certificate_management_policy":{"authority":"letsencrypt"}}`, "c", other)), both)
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+shop, s.keyA,
		fill(`{"certificate_id":"{{c}}","certificate_management_policy":{"authority":"letsencrypt"}}`, "c", other)), both)

	// A certificate that does not cover the domain, one that does not
	// exist and a malformed ID are violations of certificate_id.
	notCovering := fill(`{"domain":"deep.shop.example.com","certificate_id":"{{c}}"}`, "c", other)
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, notCovering),
		apiError{status: 400, code: errInvalid, fields: []string{"certificate_id"}})
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"b.example.com","certificate_id":"cert_000000000000000000000000000"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"certificate_id"}})
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"b.example.com","certificate_id":"nope"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"certificate_id"}})
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+shop, s.keyA, `{"certificate_id":"cert_000000000000000000000000000"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"certificate_id"}})
	unchanged(t, s, s.keyA, before)

	// A wildcard certificate covers one label below it.
	r = call(t, s, "POST", "/reserved_domains", s.keyA, fill(`{"domain":"b.example.com","certificate_id":"{{c}}"}`, "c", other))
	b := wantID(t, r.json["id"], "rd_")
	exact(t, r, 201, rd{id: b, domain: "b.example.com", cname: cnameOf(t, r), certificate: ref("tls_certificates", other)}.String())
}

// Endpoint configuration IDs in PATCH: Refs in the response, "" detaches,
// the type must match the field.
func TestE2EReservedDomainEndpointConfigurations(t *testing.T) {
	s := newE2E(t)
	httpEC := create(t, s, s.keyA, "/endpoint_configurations", `{"type":"http"}`, "ec_")
	httpsEC := create(t, s, s.keyA, "/endpoint_configurations", `{"type":"https"}`, "ec_")
	r := call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"ec.example.com"}`)
	id := wantID(t, r.json["id"], "rd_")
	d := rd{id: id, domain: "ec.example.com", cname: cnameOf(t, r)}

	d.http, d.https = ref("endpoint_configurations", httpEC), ref("endpoint_configurations", httpsEC)
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA,
		fill(`{"http_endpoint_configuration_id":"{{h}}","https_endpoint_configuration_id":"{{s}}"}`, "h", httpEC, "s", httpsEC)), 200, d.String())
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())

	// In use: the endpoint configuration cannot be deleted.
	checkError(t, call(t, s, "DELETE", "/endpoint_configurations/"+httpEC, s.keyA, ""), apiError{status: 409, code: errConflict, msg: []string{id}})

	before := snapshot(t, s, s.keyA)
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, fill(`{"http_endpoint_configuration_id":"{{s}}"}`, "s", httpsEC)),
		apiError{status: 400, code: errInvalid, fields: []string{"http_endpoint_configuration_id"}})
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, fill(`{"https_endpoint_configuration_id":"{{h}}"}`, "h", httpEC)),
		apiError{status: 400, code: errInvalid, fields: []string{"https_endpoint_configuration_id"}})
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"https_endpoint_configuration_id":"ec_000000000000000000000000000"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"https_endpoint_configuration_id"}})
	checkError(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"http_endpoint_configuration_id":"nope"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"http_endpoint_configuration_id"}})
	// The ids are update-only (SPEC 4.3 rule 3): unknown fields on create.
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, fill(`{"domain":"x.example.com","http_endpoint_configuration_id":"{{h}}"}`, "h", httpEC)),
		apiError{status: 400, code: errInvalid, fields: []string{"http_endpoint_configuration_id"}})
	unchanged(t, s, s.keyA, before)

	d.http = nil
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"http_endpoint_configuration_id":""}`), 200, d.String())
	noContent(t, call(t, s, "DELETE", "/endpoint_configurations/"+httpEC, s.keyA, ""))
}

// region: every value of SPEC 2.4 is accepted and returned; anything else
// is a violation of region.
func TestE2EReservedDomainRegion(t *testing.T) {
	s := newE2E(t)
	for _, region := range []string{"au", "eu", "ap", "us", "jp", "in", "sa"} {
		r := call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"`+region+`.edgeplane.app","region":"`+region+`"}`)
		id := wantID(t, r.json["id"], "rd_")
		exact(t, r, 201, rd{id: id, domain: region + ".edgeplane.app", region: region}.String())
	}
	before := snapshot(t, s, s.keyA)
	for _, region := range []string{"EU", "global", "us-east-1", " "} {
		checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"r.edgeplane.app","region":"`+region+`"}`),
			apiError{status: 400, code: errInvalid, fields: []string{"region"}})
	}
	unchanged(t, s, s.keyA, before)
}

// Domain validation: each bad name is a violation of domain and stores
// nothing.
func TestE2EReservedDomainNames(t *testing.T) {
	s := newE2E(t)
	before := snapshot(t, s, s.keyA)
	for _, name := range []string{
		"",          // required
		"localhost", // one label
		"under_score.example.com",
		"-lead.example.com",
		"trail-.example.com",
		"a..example.com",
		"1.2.3.4",                                // an IP address
		"x.*.example.com",                        // wildcard not first
		"*.com",                                  // wildcard needs two labels after it
		"edgeplane.app",                          // a service-owned base
		"*.edgeplane.app",                        // a wildcard on it
		"t.edgeplane-cname.com",                  // below the CNAME base
		strings.Repeat("a", 64) + ".example.com", // label over 63 bytes
		strings.Repeat(strings.Repeat("a", 63)+".", 4) + "example.com", // over 253 bytes
		"exämple.com",
		"spa ce.example.com",
	} {
		checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":`+jsonString(name)+`}`),
			apiError{status: 400, code: errInvalid, fields: []string{"domain"}})
	}
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, `{}`), apiError{status: 400, code: errInvalid, fields: []string{"domain"}})
	unchanged(t, s, s.keyA, before)
}

// A name can be reserved once in the whole service: 409 in the same and
// in another account, whatever its case; free again after the delete.
func TestE2EReservedDomainDuplicate(t *testing.T) {
	s := newE2E(t)
	id := create(t, s, s.keyA, "/reserved_domains", `{"domain":"dup.example.com"}`, "rd_")
	beforeA, beforeB := snapshot(t, s, s.keyA), snapshot(t, s, s.keyB)
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"dup.example.com"}`),
		apiError{status: 409, code: errConflict, msg: []string{"dup.example.com"}})
	checkError(t, call(t, s, "POST", "/reserved_domains", s.keyB, `{"domain":"DUP.example.com."}`),
		apiError{status: 409, code: errConflict, msg: []string{"dup.example.com"}})
	unchanged(t, s, s.keyA, beforeA)
	unchanged(t, s, s.keyB, beforeB)
	// A wildcard and the names below it are separate reservations.
	create(t, s, s.keyB, "/reserved_domains", `{"domain":"*.dup.example.com"}`, "rd_")

	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+id, s.keyA, ""))
	create(t, s, s.keyB, "/reserved_domains", `{"domain":"dup.example.com"}`, "rd_")
}

// The certificate management status as the certificate manager's reports
// change it (SPEC 2.4 and 7): a failing job with error_code, msg,
// started_at and retries_at; an issued certificate as the certificate Ref
// with renews_at and no job; detaching the policy keeps the certificate.
func TestE2EReservedDomainCertificateStatus(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	p, err := s.svc.Authenticate(ctx, s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	// null counts as absent: certificate_id null is no conflict with a
	// policy.
	r := call(t, s, "POST", "/reserved_domains", s.keyA,
		`{"domain":"managed.example.com","certificate_id":null,"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"}}`)
	id := wantID(t, r.json["id"], "rd_")
	cname := cnameOf(t, r)
	pol := map[string]any{"authority": "letsencrypt", "private_key_type": "ecdsa"}
	d := rd{id: id, domain: "managed.example.com", cname: cname, policy: pol, status: pendingStatus(jobMsg(t, r, cname))}
	exact(t, r, 201, d.String())

	// A temporary failure: retried at retries_at.
	retry := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	if _, err := s.svc.Host().Certificates().ReportCertificateFailed(ctx, p.AccountID, id, domains.ProvisioningFailure{
		ErrorCode: domains.ErrorCodeInternal, Msg: "the authority did not answer", RetriesAt: retry}); err != nil {
		t.Fatal(err)
	}
	d.status = map[string]any{"renews_at": nil, "provisioning_job": map[string]any{
		"error_code": "INTERNAL_ERROR", "msg": "the authority did not answer", "started_at": t0, "retries_at": "2026-11-21T13:00:00Z"}}
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())

	// Issued: the certificate Ref, renews_at after two thirds of the
	// lifetime, no job.
	certPEM, keyPEM := genCert(t, "managed.example.com")
	if _, err := s.svc.Host().Certificates().ReportCertificateIssued(ctx, p.AccountID, id, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	certs := listIDs(t, s, s.keyA, "/tls_certificates", "tls_certificates")
	if len(certs) != 1 {
		t.Fatalf("managed certificates: %q", certs)
	}
	d.certificate = ref("tls_certificates", certs[0])
	d.status = map[string]any{"renews_at": "2026-12-31T00:00:00Z", "provisioning_job": nil}
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())

	// A permanent failure of the next renewal: DNS_ERROR, no retry.
	if _, err := s.svc.Host().Certificates().ReportCertificateFailed(ctx, p.AccountID, id, domains.ProvisioningFailure{
		ErrorCode: domains.ErrorCodeDNS, Msg: "no CNAME record for managed.example.com"}); err != nil {
		t.Fatal(err)
	}
	d.status = map[string]any{"renews_at": "2026-12-31T00:00:00Z", "provisioning_job": map[string]any{
		"error_code": "DNS_ERROR", "msg": "no CNAME record for managed.example.com", "started_at": t0, "retries_at": nil}}
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())

	// Detaching the policy turns management off and keeps the certificate.
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+id+"/certificate_management_policy", s.keyA, ""))
	d.policy, d.status = nil, nil
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+id+"/certificate", s.keyA, ""))
	d.certificate = nil
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())

	// Detaching the certificate while a policy is attached starts a new
	// job.
	r = call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, `{"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"},"certificate_id":null}`)
	d.policy, d.status = pol, pendingStatus(jobMsg(t, r, cname))
	exact(t, r, 200, d.String())
	s.clock.Advance(time.Hour)
	noContent(t, call(t, s, "DELETE", "/reserved_domains/"+id+"/certificate", s.keyA, ""))
	r = call(t, s, "GET", "/reserved_domains/"+id, s.keyA, "")
	st := pendingStatus(jobMsg(t, r, cname))
	st["provisioning_job"].(map[string]any)["started_at"] = "2026-11-21T13:00:00Z"
	d.status = st
	exact(t, r, 200, d.String())
}

// Setting the same policy again changes nothing; setting it again after a
// failure restarts provisioning; a due renewal shows as a running job
// started at renews_at (decisions of the domains package).
func TestE2EReservedDomainPolicyRestartAndRenewal(t *testing.T) {
	s := newE2E(t)
	ctx := context.Background()
	p, err := s.svc.Authenticate(ctx, s.keyA)
	if err != nil {
		t.Fatal(err)
	}
	r := call(t, s, "POST", "/reserved_domains", s.keyA, `{"domain":"renew.example.com","certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"}}`)
	id := wantID(t, r.json["id"], "rd_")
	cname := cnameOf(t, r)
	msg := jobMsg(t, r, cname)
	pol := map[string]any{"authority": "letsencrypt", "private_key_type": "ecdsa"}
	d := rd{id: id, domain: "renew.example.com", cname: cname, policy: pol, status: pendingStatus(msg)}

	s.clock.Advance(time.Hour) // 13:00
	same := `{"certificate_management_policy":{"authority":"letsencrypt","private_key_type":"ecdsa"}}`
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, same), 200, d.String())

	if _, err := s.svc.Host().Certificates().ReportCertificateFailed(ctx, p.AccountID, id, domains.ProvisioningFailure{ErrorCode: domains.ErrorCodeDNS, Msg: "no CNAME"}); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Hour) // 14:00
	st := pendingStatus(msg)
	st["provisioning_job"].(map[string]any)["started_at"] = "2026-11-21T14:00:00Z"
	d.status = st
	exact(t, call(t, s, "PATCH", "/reserved_domains/"+id, s.keyA, same), 200, d.String())

	certPEM, keyPEM := genCert(t, "renew.example.com")
	if _, err := s.svc.Host().Certificates().ReportCertificateIssued(ctx, p.AccountID, id, certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	cert := listIDs(t, s, s.keyA, "/tls_certificates", "tls_certificates")[0]
	d.certificate = ref("tls_certificates", cert)
	d.status = map[string]any{"renews_at": "2026-12-31T00:00:00Z", "provisioning_job": nil}
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())

	s.clock.Advance(40 * 24 * time.Hour) // 2026-12-31T14:00:00Z: renewal due
	d.status = map[string]any{"renews_at": "2026-12-31T00:00:00Z", "provisioning_job": map[string]any{
		"error_code": nil, "msg": "certificate renewal has started", "started_at": "2026-12-31T00:00:00Z", "retries_at": nil}}
	exact(t, call(t, s, "GET", "/reserved_domains/"+id, s.keyA, ""), 200, d.String())
	exact(t, call(t, s, "GET", "/reserved_domains", s.keyA, ""), 200,
		`{"reserved_domains":[`+d.String()+`],"uri":"`+base+`/reserved_domains","next_page_uri":null}`)
}
