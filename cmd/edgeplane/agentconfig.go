package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/edgeplane/edgeplane/agents"
	"github.com/edgeplane/edgeplane/apierr"
	"github.com/edgeplane/edgeplane/backends"
	"github.com/edgeplane/edgeplane/domains"
	"github.com/edgeplane/edgeplane/policy"
	"github.com/edgeplane/edgeplane/policy/limits"
)

// The agent's configuration file: one YAML file (version: 1) that holds
// what every run needs (the authtoken, the tunnel servers, the CA) and
// any number of named endpoints, which edgeplane agent start runs on one
// session. It is read with go.yaml.in/yaml/v3 into a yaml.Node tree, so
// that every key can be checked against the schema (an unknown key is an
// error naming its path: endpoints[2].upstream.ur) and every error can
// name its line; and written back through the same tree, so that
// config add-authtoken and add-server keep the other keys and, as far as
// the library keeps them, the comments.

const (
	// agentConfigVersion is the version of the file's schema this agent
	// reads.
	agentConfigVersion = 1
	// maxAgentConfigBytes bounds the configuration file.
	maxAgentConfigBytes = 1 << 20
	// maxAgentEndpoints bounds the endpoints of one file (and so of one
	// session).
	maxAgentEndpoints = 100
	// maxEndpointNameBytes bounds an endpoint's name.
	maxEndpointNameBytes = 64
	// maxPolicyFileBytes bounds a traffic policy file, as the policy
	// engine bounds a document.
	maxPolicyFileBytes = limits.MaxDocumentBytes
	// defaultInspectAddr is where the agent API listens by default; when
	// its port is taken the next free one up to defaultInspectPorts-1
	// further is used.
	defaultInspectAddr  = "127.0.0.1:4040"
	defaultInspectPorts = 10
	// commandLineName is the name of the endpoint of agent http|tcp|tls
	// (the original agent's name for a tunnel from its command line).
	commandLineName = "command_line"
)

// agentFile is the agent's configuration file, checked. Its zero value is
// no file: nothing set.
type agentFile struct {
	path        string   // where it was read; "" when there is none
	authtoken   string   // agent.authtoken
	servers     []string // agent.servers, HOST:PORT each
	ca          string   // agent.ca, resolved against the file's directory
	connections int      // agent.connections; 0 when unset
	inspect     *bool    // agent.inspect; nil when unset
	inspectAddr string   // agent.inspect_addr
	endpoints   []agentEndpoint
}

// endpoint returns the file's endpoint named name.
func (f *agentFile) endpoint(name string) (agentEndpoint, bool) {
	for _, e := range f.endpoints {
		if e.name == name {
			return e, true
		}
	}
	return agentEndpoint{}, false
}

// agentEndpoint is one endpoint (or labeled tunnel) an agent runs: the
// one of agent http|tcp|tls, named command_line, or one of the file's.
type agentEndpoint struct {
	name  string
	proto string // "http", "tcp" or "tls" (a labeled tunnel: "http")
	// scheme is an http endpoint's public scheme: "https" or "http".
	scheme string
	// domain is an http or tls endpoint's name ("" for http: the server
	// picks, where it can).
	domain string
	// remoteAddr is a tcp endpoint's HOST:PORT ("": the server picks).
	remoteAddr string
	// labels make a labeled tunnel instead of an endpoint.
	labels                map[string]string
	target                agentTarget
	metadata, description string
	// policy is the traffic policy document sent with the bind, in JSON
	// ("" for none).
	policy   string
	pooling  bool     // pooling_enabled
	bindings []string // bindings
}

// publicForm says what the endpoint asks for, as config check shows it:
// its URL, or a labeled tunnel's labels.
func (e *agentEndpoint) publicForm() string {
	switch {
	case len(e.labels) > 0:
		kvs := make([]string, 0, len(e.labels))
		for _, k := range slices.Sorted(maps.Keys(e.labels)) {
			kvs = append(kvs, k+"="+e.labels[k])
		}
		return "labels " + strings.Join(kvs, ",")
	case e.proto == "tcp" && e.remoteAddr == "":
		return "tcp:// (the server picks the address)"
	case e.proto == "tcp":
		return "tcp://" + e.remoteAddr
	case e.proto == "tls":
		return "tls://" + e.domain
	case e.domain == "":
		return e.scheme + ":// (the server picks the name)"
	}
	return e.scheme + "://" + e.domain
}

// configIssue is one error of a configuration file: where, the key's
// path (agent.servers[1], endpoints[2].upstream.url) and what is wrong.
type configIssue struct {
	line, col    int // 0 when the issue is the file's as a whole
	path, reason string
}

// configError is every issue of a configuration file.
type configError struct {
	file   string
	issues []configIssue
}

// Error lists the issues, one a line, each as FILE:LINE:COLUMN: PATH:
// REASON.
func (e *configError) Error() string {
	var b strings.Builder
	n := len(e.issues)
	fmt.Fprintf(&b, "%s: %d error", e.file, n)
	if n != 1 {
		b.WriteString("s")
	}
	for _, is := range e.issues {
		b.WriteString("\n  " + is.text(e.file))
	}
	return b.String()
}

// text says the issue on one line.
func (is configIssue) text(file string) string {
	s := file
	if is.line > 0 {
		s += ":" + strconv.Itoa(is.line) + ":" + strconv.Itoa(is.col)
	}
	if is.path != "" {
		s += ": " + is.path
	}
	return s + ": " + oneLine(is.reason)
}

// configReader checks a file's node tree against the schema, gathering
// every issue.
type configReader struct {
	file   string
	dir    string                            // relative paths in the file are relative to it
	read   func(string, int) ([]byte, error) // reads a file the config names, at most n bytes
	issues []configIssue
}

func (r *configReader) add(n *yaml.Node, path, format string, args ...any) {
	is := configIssue{path: path, reason: fmt.Sprintf(format, args...)}
	if n != nil {
		is.line, is.col = n.Line, n.Column
	}
	r.issues = append(r.issues, is)
}

func (r *configReader) err() error {
	if len(r.issues) == 0 {
		return nil
	}
	return &configError{file: r.file, issues: r.issues}
}

// resolve returns a path the file names, relative to the file's
// directory.
func (r *configReader) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.dir, p)
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// isNull says whether n is a null value (key: with nothing after it).
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName says what a node is, for an error.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!bool":
			return "true or false"
		case "!!int", "!!float":
			return "a number"
		case "!!null":
			return "nothing"
		}
		return "text"
	}
	return "something else"
}

// subPath joins a key to a path.
func subPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields walks the mapping n at path: each key of known is handed its
// value (unless null, which leaves the key unset); a key known does not
// have, or one given twice, is an issue. It says whether n is a mapping.
func (r *configReader) fields(n *yaml.Node, path string, known map[string]func(v *yaml.Node, path string)) bool {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		r.add(n, path, "must be a mapping (key: value lines), not %s", kindName(n))
		return false
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			r.add(k, path, "a key must be a plain name")
			continue
		}
		p := subPath(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			r.add(k, p, "given twice (first on line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := known[k.Value]
		if !ok {
			r.add(k, p, "unknown key; want %s", strings.Join(slices.Sorted(maps.Keys(known)), ", "))
			continue
		}
		if !isNull(v) {
			f(deref(v), p)
		}
	}
	return true
}

// text returns a scalar as text: a string, or a number as written. Text
// that must not hold control characters is checked by the caller.
func (r *configReader) text(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!bool" {
		r.add(n, path, "must be text, not %s (quote it)", kindName(n))
		return "", false
	}
	return n.Value, true
}

// boolean returns a true or false value.
func (r *configReader) boolean(n *yaml.Node, path string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		r.add(n, path, "must be true or false, not %s", kindName(n))
		return false, false
	}
	return b, true
}

// integer returns a whole number.
func (r *configReader) integer(n *yaml.Node, path string) (int, bool) {
	var i int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		r.add(n, path, "must be a whole number, not %s", kindName(n))
		return 0, false
	}
	return i, true
}

// list returns the items of a list.
func (r *configReader) list(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	if n.Kind != yaml.SequenceNode {
		r.add(n, path, "must be a list ([a, b] or - lines), not %s", kindName(n))
		return nil, false
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		items[i] = deref(c)
	}
	return items, true
}

// readAgentFile reads the configuration file at path, at most
// maxAgentConfigBytes; a file that does not exist is (nil, nil) unless
// required.
func readAgentFile(path string, required bool) (*agentFile, error) {
	data, err := readBounded(path, maxAgentConfigBytes)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseAgentFile(path, data, readBounded)
}

// readBounded reads the file at path, refusing one of more than max
// bytes.
func readBounded(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, fmt.Errorf("%s: the file is larger than %d bytes, the most allowed", path, max)
	}
	return data, nil
}

// parseAgentFile checks data, the configuration file at file, and
// returns it; read reads the files it names (traffic_policy_file, ca),
// at most n bytes. The error, if any, is a *configError listing every
// issue found.
func parseAgentFile(file string, data []byte, read func(path string, n int) ([]byte, error)) (*agentFile, error) {
	r := &configReader{file: file, dir: filepath.Dir(file), read: read}
	if len(data) > maxAgentConfigBytes {
		r.add(nil, "", "the file is %d bytes; at most %d (1 MiB) are allowed", len(data), maxAgentConfigBytes)
		return nil, r.err()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		r.add(nil, "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, r.err()
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		r.add(nil, "", "the file is empty: it needs at least version: %d", agentConfigVersion)
		return nil, r.err()
	}
	cfg := &agentFile{path: file}
	root := doc.Content[0]
	var version *yaml.Node
	r.fields(root, "", map[string]func(*yaml.Node, string){
		"version":   func(v *yaml.Node, _ string) { version = v },
		"agent":     func(v *yaml.Node, p string) { r.agent(v, p, cfg) },
		"endpoints": func(v *yaml.Node, p string) { r.endpoints(v, p, cfg) },
	})
	if deref(root).Kind == yaml.MappingNode {
		switch v, ok := 0, version != nil; {
		case !ok:
			r.add(root, "version", "is required: version: %d", agentConfigVersion)
		case version.Kind != yaml.ScalarNode || version.ShortTag() != "!!int" || version.Decode(&v) != nil || v != agentConfigVersion:
			r.add(version, "version", "must be %d, the version of edgeplane's agent configuration this agent reads (the original agent's version 2 and 3 files have another schema: docs/agent.md)", agentConfigVersion)
		}
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// agent reads the agent: section.
func (r *configReader) agent(n *yaml.Node, path string, cfg *agentFile) {
	r.fields(n, path, map[string]func(*yaml.Node, string){
		"authtoken": func(v *yaml.Node, p string) {
			if s, ok := r.text(v, p); ok {
				if s == "" || strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
					r.add(v, p, "must be a tunnel credential's token: no spaces or control characters")
					return
				}
				cfg.authtoken = s
			}
		},
		"servers": func(v *yaml.Node, p string) {
			items, ok := r.list(v, p)
			if !ok {
				return
			}
			if len(items) > maxAgentServers {
				r.add(v, p, "has %d servers; at most %d are allowed", len(items), maxAgentServers)
				return
			}
			seen := map[string]int{}
			for i, item := range items {
				ip := p + "[" + strconv.Itoa(i) + "]"
				s, ok := r.text(item, ip)
				if !ok {
					continue
				}
				host, err := checkHostPort(s)
				if err != nil {
					r.add(item, ip, "%q: %v", s, err)
					continue
				}
				key := serverKey(host, s)
				if first, dup := seen[key]; dup {
					r.add(item, ip, "%q: the same server as %s[%d]: give each server once", s, p, first)
					continue
				}
				seen[key] = i
				cfg.servers = append(cfg.servers, s)
			}
		},
		"ca": func(v *yaml.Node, p string) {
			s, ok := r.text(v, p)
			if !ok {
				return
			}
			file := r.resolve(s)
			pem, err := r.read(file, maxAgentConfigBytes)
			if err != nil {
				r.add(v, p, "%v", err)
				return
			}
			if _, err := rootsFromPEM(pem); err != nil {
				r.add(v, p, "%s: %v", file, err)
				return
			}
			cfg.ca = file
		},
		"connections": func(v *yaml.Node, p string) {
			if c, ok := r.integer(v, p); ok {
				if c < 1 || c > maxAgentConnections {
					r.add(v, p, "must be from 1 to %d", maxAgentConnections)
					return
				}
				cfg.connections = c
			}
		},
		"inspect": func(v *yaml.Node, p string) {
			if b, ok := r.boolean(v, p); ok {
				cfg.inspect = &b
			}
		},
		"inspect_addr": func(v *yaml.Node, p string) {
			s, ok := r.text(v, p)
			if !ok {
				return
			}
			if err := checkInspectAddr(s); err != nil {
				r.add(v, p, "%q: %v", s, err)
				return
			}
			cfg.inspectAddr = s
		},
	})
}

// endpoints reads the endpoints: list.
func (r *configReader) endpoints(n *yaml.Node, path string, cfg *agentFile) {
	items, ok := r.list(n, path)
	if !ok {
		return
	}
	if len(items) > maxAgentEndpoints {
		r.add(n, path, "has %d endpoints; at most %d are allowed", len(items), maxAgentEndpoints)
		return
	}
	names := map[string]int{}
	for i, item := range items {
		p := path + "[" + strconv.Itoa(i) + "]"
		e, nameNode, ok := r.endpoint(item, p)
		if !ok {
			continue
		}
		if first, dup := names[e.name]; dup {
			r.add(nameNode, p+".name", "%q is the name of %s[%d] too: each endpoint's name is its own", e.name, path, first)
			continue
		}
		names[e.name] = i
		cfg.endpoints = append(cfg.endpoints, e)
	}
}

// endpoint reads one endpoint; it also returns its name's node.
func (r *configReader) endpoint(n *yaml.Node, path string) (agentEndpoint, *yaml.Node, bool) {
	before := len(r.issues)
	var (
		e                                  agentEndpoint
		nameNode, urlNode, domainNode      *yaml.Node
		labelsNode, upstreamNode, upNode   *yaml.Node
		policyNode, policyFileNode         *yaml.Node
		poolingNode, bindingsNode          *yaml.Node
		rawURL, rawDomain, rawUp           string
		policyJSON, policyFileJSON         string
		labels                             map[string]string
		metadataNode, descriptionNode      *yaml.Node
		metadata, description, policyFrom  string
		hasURL, hasDomain, hasUp, isLabels bool
	)
	if !r.fields(n, path, map[string]func(*yaml.Node, string){
		"name": func(v *yaml.Node, p string) {
			nameNode = v
			if s, ok := r.text(v, p); ok {
				if err := checkEndpointName(s); err != nil {
					r.add(v, p, "%q: %v", s, err)
					return
				}
				e.name = s
			}
		},
		"url": func(v *yaml.Node, p string) {
			urlNode = v
			rawURL, hasURL = r.text(v, p)
		},
		"domain": func(v *yaml.Node, p string) {
			domainNode = v
			rawDomain, hasDomain = r.text(v, p)
		},
		"labels": func(v *yaml.Node, p string) {
			labelsNode = v
			if v.Kind != yaml.MappingNode {
				r.add(v, p, "must be a mapping of labels (app: web), not %s", kindName(v))
				return
			}
			isLabels, labels = true, map[string]string{}
			for i := 0; i+1 < len(v.Content); i += 2 {
				k := v.Content[i]
				lp := subPath(p, k.Value)
				if _, dup := labels[k.Value]; dup || k.Kind != yaml.ScalarNode {
					r.add(k, lp, "each label's key must be text, given once")
					continue
				}
				if s, ok := r.text(deref(v.Content[i+1]), lp); ok {
					labels[k.Value] = s
				}
			}
		},
		"upstream": func(v *yaml.Node, p string) {
			upstreamNode = v
			r.fields(v, p, map[string]func(*yaml.Node, string){
				"url": func(v *yaml.Node, p string) {
					upNode = v
					rawUp, hasUp = r.text(v, p)
				},
			})
		},
		"traffic_policy": func(v *yaml.Node, p string) {
			policyNode = v
			if s, err := policyValue(v); err != nil {
				r.add(v, p, "%v", err)
			} else {
				policyJSON = s
			}
		},
		"traffic_policy_file": func(v *yaml.Node, p string) {
			policyFileNode = v
			s, ok := r.text(v, p)
			if !ok {
				return
			}
			file := r.resolve(s)
			data, err := r.read(file, maxPolicyFileBytes)
			if err != nil {
				r.add(v, p, "%v", err)
				return
			}
			if policyFileJSON, err = policyDocument(data); err != nil {
				r.add(v, p, "%s: %v", file, err)
			}
			policyFrom = file
		},
		"pooling_enabled": func(v *yaml.Node, p string) {
			poolingNode = v
			e.pooling, _ = r.boolean(v, p)
		},
		"bindings": func(v *yaml.Node, p string) {
			bindingsNode = v
			items, ok := r.list(v, p)
			if !ok {
				return
			}
			if len(items) > 1 {
				r.add(v, p, "has %d bindings; give one: public or internal", len(items))
				return
			}
			for i, item := range items {
				ip := p + "[" + strconv.Itoa(i) + "]"
				if s, ok := r.text(item, ip); ok {
					if s != "public" && s != "internal" {
						r.add(item, ip, "%q: want public or internal", s)
						continue
					}
					e.bindings = append(e.bindings, s)
				}
			}
		},
		"metadata": func(v *yaml.Node, p string) {
			metadataNode = v
			metadata, _ = r.text(v, p)
		},
		"description": func(v *yaml.Node, p string) {
			descriptionNode = v
			description, _ = r.text(v, p)
		},
	}) {
		return e, nil, false
	}
	if nameNode == nil {
		r.add(n, subPath(path, "name"), "is required: the endpoint's name, which agent start and the agent API use")
	}

	// What the endpoint is: one of url, domain and labels.
	switch given := btoi(urlNode != nil) + btoi(domainNode != nil) + btoi(labelsNode != nil); {
	case given == 0:
		r.add(n, path, "needs one of url (https://NAME, http://NAME, tls://NAME or tcp://HOST:PORT), domain (an https endpoint's NAME) or labels (a labeled tunnel)")
	case given > 1:
		at := urlNode
		if at == nil {
			at = domainNode
		}
		r.add(at, path, "give one of url, domain and labels, not %d", given)
	case hasURL:
		r.endpointURL(&e, urlNode, subPath(path, "url"), rawURL)
	case hasDomain:
		name, err := domains.ParseName(rawDomain)
		if err != nil {
			r.add(domainNode, subPath(path, "domain"), "%q: %v", rawDomain, err)
		}
		e.proto, e.scheme, e.domain = "http", "https", name
	case isLabels:
		e.proto, e.labels = "http", labels
		if err := backends.ValidateLabels(labels); err != nil {
			var ae *apierr.Error
			if errors.As(err, &ae) && len(ae.Violations) > 0 {
				for _, v := range ae.Violations {
					r.add(labelsNode, subPath(path, "labels"), "%s", v.String())
				}
			} else {
				r.add(labelsNode, subPath(path, "labels"), "%v", err)
			}
		}
	}

	// Where its connections go.
	switch {
	case upstreamNode == nil:
		r.add(n, subPath(path, "upstream"), "is required: upstream: {url: ...}, where the agent forwards the endpoint's connections")
	case upNode == nil:
		r.add(upstreamNode, subPath(path, "upstream.url"), "is required: a PORT, an http:// or https:// URL, or HOST:PORT")
	case hasUp && e.proto != "":
		t, reason := endpointTarget(&e, rawUp)
		if reason != "" {
			r.add(upNode, subPath(path, "upstream.url"), "%q: %s", rawUp, reason)
		}
		e.target = t
	}

	// Its traffic policy, pooling and binding.
	switch {
	case policyNode != nil && policyFileNode != nil:
		r.add(policyFileNode, path, "give one of traffic_policy and traffic_policy_file")
	case isLabels && (policyNode != nil || policyFileNode != nil):
		at := policyNode
		if at == nil {
			at = policyFileNode
		}
		r.add(at, path, "a labeled tunnel carries no traffic policy: the edge's route that selects it has one")
	case policyNode != nil:
		e.policy = policyJSON
		r.checkPolicy(policyNode, subPath(path, "traffic_policy"), "", policyJSON)
	case policyFileNode != nil:
		e.policy = policyFileJSON
		r.checkPolicy(policyFileNode, subPath(path, "traffic_policy_file"), policyFrom, policyFileJSON)
	}
	if isLabels && poolingNode != nil && e.pooling {
		r.add(poolingNode, subPath(path, "pooling_enabled"), "a labeled tunnel is not pooled: the tunnel group backend that selects it spreads connections already")
	}
	if isLabels && bindingsNode != nil {
		r.add(bindingsNode, subPath(path, "bindings"), "a labeled tunnel has no binding: edges reach it")
	}
	if slices.Contains(e.bindings, "internal") && e.proto != "" {
		host := e.domain
		if e.proto == "tcp" {
			host, _, _ = net.SplitHostPort(e.remoteAddr)
		}
		if !strings.HasSuffix(host, ".internal") {
			r.add(bindingsNode, subPath(path, "bindings"), "an internal endpoint's url must name a host ending in .internal, not %q", host)
		}
	}
	if metadataNode != nil {
		if reason := checkText(metadata, agents.MaxMetadataBytes); reason != "" {
			r.add(metadataNode, subPath(path, "metadata"), "%s", reason)
		}
		e.metadata = metadata
	}
	if descriptionNode != nil {
		if reason := checkText(description, agents.MaxDescriptionBytes); reason != "" {
			r.add(descriptionNode, subPath(path, "description"), "%s", reason)
		}
		e.description = description
	}
	return e, nameNode, len(r.issues) == before
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkText checks a metadata or description: valid UTF-8 of at most max
// bytes; it returns what is wrong, or "".
func checkText(s string, max int) string {
	switch {
	case len(s) > max:
		return fmt.Sprintf("must be at most %d bytes, got %d", max, len(s))
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	}
	return ""
}

// checkEndpointName checks an endpoint's name: 1 to 64 letters, digits,
// '-', '_' and '.', so that it reads well on a command line and in the
// agent API's paths (/api/tunnels/NAME).
func checkEndpointName(s string) error {
	if s == "" || len(s) > maxEndpointNameBytes {
		return fmt.Errorf("must be 1 to %d characters", maxEndpointNameBytes)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("may contain only letters, digits, '-', '_' and '.', not %q", c)
		}
	}
	return nil
}

// endpointURL reads an endpoint's url: its scheme says the protocol.
func (r *configReader) endpointURL(e *agentEndpoint, n *yaml.Node, path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || !strings.Contains(raw, "://") {
		r.add(n, path, "%q: want https://NAME, http://NAME, tls://NAME or tcp://HOST:PORT", raw)
		return
	}
	switch {
	case u.User != nil:
		r.add(n, path, "%q: must not carry a user or password", raw)
		return
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		r.add(n, path, "%q: give the scheme and the address only: an endpoint serves every path", raw)
		return
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "https", "http", "tls":
		e.proto, e.scheme = "http", scheme
		if scheme == "tls" {
			e.proto, e.scheme = "tls", ""
		}
		want := map[string]string{"https": "443", "http": "80", "tls": "443"}[scheme]
		if p := u.Port(); p != "" && p != want {
			r.add(n, path, "%q: a %s endpoint serves port %s; leave the port out", raw, scheme, want)
			return
		}
		if u.Hostname() == "" {
			if scheme == "tls" {
				r.add(n, path, "%q: a tls endpoint needs its name: the server name its clients' TLS asks for", raw)
			}
			return // http, https: the server picks a name, where it can
		}
		name, err := domains.ParseName(u.Hostname())
		if err != nil {
			r.add(n, path, "%q: %v", raw, err)
			return
		}
		e.domain = name
	case "tcp":
		e.proto = "tcp"
		if u.Host == "" {
			return // the server picks the address
		}
		if _, err := checkHostPort(u.Host); err != nil {
			r.add(n, path, "%q: %v", raw, err)
			return
		}
		e.remoteAddr = u.Host
	default:
		r.add(n, path, "%q: the scheme must be https, http, tls or tcp", raw)
	}
}

// endpointTarget parses the upstream of e (whose protocol is known): a
// PORT, an http:// or https:// URL for an http endpoint, HOST:PORT (also
// as tcp:// or, for tls, tls://) for tcp and tls; a labeled tunnel takes
// either. It returns what is wrong, or "".
func endpointTarget(e *agentEndpoint, s string) (agentTarget, string) {
	proto := e.proto
	if len(e.labels) > 0 && (strings.HasPrefix(s, "tcp://") || !strings.Contains(s, "://") && strings.Contains(s, ":")) {
		proto = "tcp" // a labeled tunnel relaying bytes as they come
	}
	switch proto {
	case "tcp":
		s = strings.TrimPrefix(s, "tcp://")
	case "tls":
		s = strings.TrimPrefix(strings.TrimPrefix(s, "tls://"), "tcp://")
	}
	if proto != "http" && strings.Contains(s, "://") {
		return agentTarget{}, targetForms(proto) + ", or tcp://HOST:PORT"
	}
	return targetOf(proto, s)
}

// checkPolicy checks the shape of an endpoint's traffic policy document
// (the server compiles it when the endpoint binds). from names the file
// it came from, if any.
func (r *configReader) checkPolicy(n *yaml.Node, path, from, doc string) {
	if doc == "" {
		return
	}
	_, err := policy.Parse([]byte(doc))
	var ae *apierr.Error
	if err == nil || !errors.As(err, &ae) {
		if err != nil {
			r.add(n, path, "%v", err)
		}
		return
	}
	for _, v := range ae.Violations {
		reason := v.String()
		if from != "" {
			reason = from + ": " + reason
		}
		r.add(n, path, "%s", reason)
	}
}

// policyValue returns the JSON of an endpoint's traffic_policy: a
// mapping written inline in YAML, or a string holding a JSON (or YAML)
// document.
func policyValue(n *yaml.Node) (string, error) {
	switch {
	case n.Kind == yaml.MappingNode:
		return yamlToJSON(n)
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		return policyDocument([]byte(n.Value))
	}
	return "", fmt.Errorf("must be a traffic policy document: a mapping (on_http_request: ...) or a string holding its JSON, not %s", kindName(n))
}

// policyDocument returns the JSON of a traffic policy document written
// in YAML or JSON (which is YAML): a mapping.
func policyDocument(data []byte) (string, error) {
	if len(data) > maxPolicyFileBytes {
		return "", fmt.Errorf("the document is %d bytes; at most %d are allowed", len(data), maxPolicyFileBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("neither JSON nor YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return "", errors.New("the document is empty: want a mapping of phases (on_http_request: [...])")
	}
	n := deref(doc.Content[0])
	if n.Kind != yaml.MappingNode {
		return "", fmt.Errorf("must be a mapping of phases (on_http_request: [...]), not %s", kindName(n))
	}
	return yamlToJSON(n)
}

// maxYAMLNodes bounds the nodes yamlToJSON visits, aliases expanded (a
// small file of nested aliases can name billions), and maxYAMLDepth how
// deep they nest (an alias may name a node that holds it).
const (
	maxYAMLNodes = 1 << 18
	maxYAMLDepth = 64
)

// yamlToJSON returns the JSON of a YAML value: mappings (with text keys)
// as objects in their order, lists as arrays, and scalars by their tags
// (strings, numbers, true and false, null; a timestamp as its text).
func yamlToJSON(n *yaml.Node) (string, error) {
	var b bytes.Buffer
	budget := maxYAMLNodes
	if err := appendJSON(&b, n, &budget, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func appendJSON(b *bytes.Buffer, n *yaml.Node, budget *int, depth int) error {
	n = deref(n)
	if *budget--; *budget < 0 || b.Len() > maxPolicyFileBytes {
		return fmt.Errorf("the document is larger than %d bytes once its aliases are expanded", maxPolicyFileBytes)
	}
	if depth > maxYAMLDepth {
		return fmt.Errorf("line %d: the document nests deeper than %d levels (an alias inside the node it names?)", n.Line, maxYAMLDepth)
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: a key must be text", k.Line)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k.Value)
			b.WriteByte(':')
			if err := appendJSON(b, n.Content[i+1], budget, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendJSON(b, c, budget, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %v", n.Line, err)
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int":
			var v int64
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %q is not a whole number JSON can hold", n.Line, n.Value)
			}
			b.WriteString(strconv.FormatInt(v, 10))
		case "!!float":
			var v float64
			if err := n.Decode(&v); err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
				return fmt.Errorf("line %d: %q is not a number JSON can hold", n.Line, n.Value)
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		case "!!str", "!!timestamp", "!!binary":
			writeJSONString(b, n.Value)
		default:
			return fmt.Errorf("line %d: the tag %s has no JSON form", n.Line, n.Tag)
		}
	default:
		return fmt.Errorf("line %d: a value of no JSON form", n.Line)
	}
	return nil
}

// writeJSONString writes s as a JSON string, without escaping HTML.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// checkInspectAddr checks the agent API's address: HOST:PORT of a
// loopback address (the API has no authentication), port 0 choosing a
// free one.
func checkInspectAddr(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want HOST:PORT, such as 127.0.0.1:4040")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strings.Trim(port, "0123456789") != "" {
		return fmt.Errorf("the port must be a number from 0 to 65535, not %q", port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("must be a loopback address (127.0.0.1, ::1 or localhost): the agent API has no authentication")
	}
	return nil
}

// defaultAgentConfigPath returns the configuration file's default path:
// $XDG_CONFIG_HOME/edgeplane/agent.yml, else
// $HOME/.config/edgeplane/agent.yml; "" when neither variable is set.
func defaultAgentConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "edgeplane", "agent.yml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "edgeplane", "agent.yml")
	}
	return ""
}
