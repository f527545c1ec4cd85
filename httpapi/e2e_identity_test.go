package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/edgeplane/edgeplane/identity"
)

// TestE2EAPIKeys: the original client's calls for API keys, in its
// shapes: create (the token once), get, list, update and delete (which
// revokes at once); a non-admin manages only its own keys; an admin names
// other owners.
func TestE2EAPIKeys(t *testing.T) {
	s := newE2E(t)
	r := call(t, s, "POST", "/api_keys", s.keyA, `{"description":"ci key","metadata":"{\"team\":\"infra\"}"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := wantID(t, r.json["id"], "ak_")
	token, _ := r.json["token"].(string)
	if !strings.HasPrefix(token, identity.APIKeySecretPrefix) {
		t.Fatalf("the create answer has no token: %s", r.body)
	}
	owner, _ := r.json["owner_id"].(string)
	wantID(t, owner, "usr_")
	shape := `{"id":"{{id}}","uri":"https://api.example.test/api_keys/{{id}}","created_at":"2026-11-21T12:00:00Z",
		"description":"ci key","metadata":"{\"team\":\"infra\"}","owner_id":"{{owner}}","token":null}`
	exact(t, call(t, s, "GET", "/api_keys/"+id, s.keyA, ""), 200, shape, "id", id, "owner", owner)

	// The new key authenticates; its token is shown nowhere else.
	if r := call(t, s, "GET", "/api_keys?limit=100", token, ""); r.status != 200 || strings.Contains(string(r.body), token) {
		t.Fatalf("list with the new key: %d %s", r.status, r.body)
	}
	if ids := walk(t, s, s.keyA, "/api_keys", "keys"); !contains(ids, id) {
		t.Errorf("the list does not show the new key: %v", ids)
	}

	exact(t, call(t, s, "PATCH", "/api_keys/"+id, s.keyA, `{"description":"renamed"}`), 200,
		strings.Replace(shape, `"ci key"`, `"renamed"`, 1), "id", id, "owner", owner)
	checkError(t, call(t, s, "PATCH", "/api_keys/"+id, s.keyA, `{"owner_id":"usr_0000000000000000000000000000"}`),
		apiError{status: 400, code: errInvalid, fields: []string{"owner_id"}})

	noContent(t, call(t, s, "DELETE", "/api_keys/"+id, s.keyA, ""))
	if r := call(t, s, "GET", "/credentials", token, ""); r.status != 401 {
		t.Errorf("a deleted key still authenticates: %d", r.status)
	}
	if r := call(t, s, "GET", "/api_keys/"+id, s.keyA, ""); r.status != 404 {
		t.Errorf("get a deleted key: %d", r.status)
	}

	// A non-admin bot: its own keys only.
	bot := create(t, s, s.keyA, "/bot_users", `{"name":"deployer"}`, "bot_")
	r = call(t, s, "POST", "/api_keys", s.keyA, `{"owner_id":"`+bot+`"}`) // an admin names the owner
	if r.status != 201 || r.json["owner_id"] != bot {
		t.Fatalf("an admin creating a bot's key: %d %s", r.status, r.body)
	}
	botKey, botKeyID := r.json["token"].(string), r.json["id"].(string)
	adminKeys := walk(t, s, s.keyA, "/api_keys", "keys")
	if got := walk(t, s, botKey, "/api_keys", "keys"); len(got) != 1 || got[0] != botKeyID {
		t.Errorf("a non-admin lists %v, want only its own key %s", got, botKeyID)
	}
	for _, other := range adminKeys {
		if other == botKeyID {
			continue
		}
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			body := ""
			if m == "PATCH" {
				body = `{"description":"x"}`
			}
			if r := call(t, s, m, "/api_keys/"+other, botKey, body); r.status != 404 {
				t.Errorf("%s another owner's key as a non-admin: %d %s", m, r.status, r.body)
			}
		}
	}
	checkError(t, call(t, s, "POST", "/api_keys", botKey, `{"owner_id":"`+owner+`"}`), apiError{status: 403, code: "ERR_SERVICE_104"})
	checkError(t, call(t, s, "POST", "/api_keys", s.keyA, `{"owner_id":"bot_0000000000000000000000000000"}`), apiError{status: 400, code: errInvalid, fields: []string{"owner_id"}})
	checkError(t, call(t, s, "POST", "/api_keys", s.keyA, `{"description":"`+strings.Repeat("x", 256)+`"}`), apiError{status: 400, code: errInvalid, fields: []string{"description"}})
	// Account isolation: B never sees A's keys.
	if r := call(t, s, "GET", "/api_keys/"+botKeyID, s.keyB, ""); r.status != 404 {
		t.Errorf("B reads A's key: %d", r.status)
	}
	if got := walk(t, s, s.keyB, "/api_keys", "keys"); contains(got, botKeyID) {
		t.Errorf("B lists A's key")
	}
}

// TestE2EBotUsers: bot users in the original client's shapes; a
// deactivated bot's API keys and authtokens are refused at once and
// accepted again when it is activated; only admins manage bots; a bot
// that owns credentials cannot be deleted; deleting one deletes its keys.
func TestE2EBotUsers(t *testing.T) {
	s := newE2E(t)
	r := call(t, s, "POST", "/bot_users", s.keyA, `{"name":"ci bot"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	bot := wantID(t, r.json["id"], "bot_")
	shape := `{"id":"{{id}}","uri":"https://api.example.test/bot_users/{{id}}","created_at":"2026-11-21T12:00:00Z","name":"ci bot","active":true}`
	exact(t, r, 201, shape, "id", bot)
	exact(t, call(t, s, "GET", "/bot_users/"+bot, s.keyA, ""), 200, shape, "id", bot)
	if got := walk(t, s, s.keyA, "/bot_users", "bot_users"); len(got) != 1 || got[0] != bot {
		t.Errorf("list: %v", got)
	}

	r = call(t, s, "POST", "/api_keys", s.keyA, `{"owner_id":"`+bot+`"}`)
	botKey, botKeyID := r.json["token"].(string), r.json["id"].(string)
	cr := call(t, s, "POST", "/credentials", s.keyA, `{"owner_id":"`+bot+`"}`)
	if cr.status != 201 {
		t.Fatalf("a credential owned by the bot: %d %s", cr.status, cr.body)
	}
	authtoken := cr.json["token"].(string)
	if r := call(t, s, "GET", "/credentials", botKey, ""); r.status != 200 {
		t.Fatalf("the active bot's key: %d", r.status)
	}
	// A non-admin may read but not manage bots.
	checkError(t, call(t, s, "POST", "/bot_users", botKey, `{"name":"x"}`), apiError{status: 403, code: "ERR_SERVICE_104"})
	checkError(t, call(t, s, "PATCH", "/bot_users/"+bot, botKey, `{"active":false}`), apiError{status: 403, code: "ERR_SERVICE_104"})
	checkError(t, call(t, s, "DELETE", "/bot_users/"+bot, botKey, ""), apiError{status: 403, code: "ERR_SERVICE_104"})

	exact(t, call(t, s, "PATCH", "/bot_users/"+bot, s.keyA, `{"active":false}`), 200,
		strings.Replace(shape, `"active":true`, `"active":false`, 1), "id", bot)
	if r := call(t, s, "GET", "/credentials", botKey, ""); r.status != 401 {
		t.Errorf("a deactivated bot's key: %d, want 401", r.status)
	}
	if _, err := s.svc.Host().AuthenticateTunnelToken(context.Background(), authtoken); err == nil {
		t.Error("a deactivated bot's authtoken is accepted")
	}
	call(t, s, "PATCH", "/bot_users/"+bot, s.keyA, `{"active":true,"name":"renamed"}`)
	if r := call(t, s, "GET", "/credentials", botKey, ""); r.status != 200 {
		t.Errorf("the reactivated bot's key: %d", r.status)
	}
	if _, err := s.svc.Host().AuthenticateTunnelToken(context.Background(), authtoken); err != nil {
		t.Errorf("the reactivated bot's authtoken: %v", err)
	}

	checkError(t, call(t, s, "PATCH", "/bot_users/"+bot, s.keyA, `{"name":""}`), apiError{status: 400, code: errInvalid, fields: []string{"name"}})
	checkError(t, call(t, s, "POST", "/bot_users", s.keyA, `{}`), apiError{status: 400, code: errInvalid, fields: []string{"name"}})
	checkError(t, call(t, s, "POST", "/bot_users", s.keyA, `{"name":"`+strings.Repeat("n", 256)+`"}`), apiError{status: 400, code: errInvalid, fields: []string{"name"}})

	// It owns a credential: deleting it is a conflict naming it.
	r = call(t, s, "DELETE", "/bot_users/"+bot, s.keyA, "")
	if r.status != 409 || !strings.Contains(string(r.body), cr.json["id"].(string)) {
		t.Fatalf("delete a bot that owns a credential: %d %s", r.status, r.body)
	}
	noContent(t, call(t, s, "DELETE", "/credentials/"+cr.json["id"].(string), s.keyA, ""))
	noContent(t, call(t, s, "DELETE", "/bot_users/"+bot, s.keyA, ""))
	if r := call(t, s, "GET", "/api_keys/"+botKeyID, s.keyA, ""); r.status != 404 {
		t.Errorf("the deleted bot's key: %d, want 404", r.status)
	}
	if r := call(t, s, "GET", "/credentials", botKey, ""); r.status != 401 {
		t.Errorf("the deleted bot's key authenticates: %d", r.status)
	}
	if r := call(t, s, "GET", "/bot_users/"+bot, s.keyB, ""); r.status != 404 {
		t.Errorf("B reads A's bot: %d", r.status)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
