package edgeplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/edgeplane/edgeplane"
	"github.com/edgeplane/edgeplane/events"
	"github.com/edgeplane/edgeplane/identity"
	"github.com/edgeplane/edgeplane/ipaccess"
	"github.com/edgeplane/edgeplane/sqlitestore"
	"github.com/edgeplane/edgeplane/webhook"
)

// BenchmarkWebhookDelivery measures events per second from commit to a
// receiver for one destination on a SQLite file: 16 writers create IP
// policies (each create an ip_policy_created.v0 event of a subscription
// sending to the destination); the time runs until the receiver has
// every event. lag-p50-ms and lag-p99-ms are the times from a create's
// answer to its event's arrival.
func BenchmarkWebhookDelivery(b *testing.B) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{FeedRetention: 1_000_000})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	svc, err := edgeplane.New(st, edgeplane.Options{SealingKey: make([]byte, edgeplane.SealingKeySize), Events: testEvents(events.Options{})})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	acct, err := svc.Host().CreateAccount(ctx, identity.AccountParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	user, err := svc.Host().CreateUser(ctx, acct.ID, identity.SubjectParams{Name: "bench", Admin: true})
	if err != nil {
		b.Fatal(err)
	}
	p := edgeplane.Principal{AccountID: acct.ID, SubjectID: user.ID, Admin: true}

	var mu sync.Mutex
	committed := map[string]time.Time{}
	var lags []time.Duration
	arrived := make(chan struct{}, 1<<16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct{ Object struct{ ID string } }
		_ = json.Unmarshal(body, &ev)
		now := time.Now()
		mu.Lock()
		if at, ok := committed[ev.Object.ID]; ok {
			lags = append(lags, now.Sub(at))
		}
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer srv.Close()
	d, err := svc.CreateEventDestination(ctx, p, events.CreateDestinationParams{
		Target: &events.TargetParams{HTTP: &events.HTTPTargetParams{URL: srv.URL}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateEventSubscription(ctx, p, events.CreateSubscriptionParams{DestinationIDs: []string{d.ID},
		Sources: []events.CreateSourceParams{{Type: "ip_policy_created.v0"}}}); err != nil {
		b.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = webhook.Run(rctx, svc.Host().EventDelivery(), webhook.Options{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Rescan: 10 * time.Millisecond})
	}()
	defer func() { stop(); <-done }()

	const writers = 16
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pol, err := svc.CreateIPPolicy(ctx, p, ipaccess.CreatePolicyParams{Description: strconv.Itoa(i)})
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				committed[pol.ID] = time.Now()
				mu.Unlock()
			}
		}()
	}
	timeout := time.After(5 * time.Minute)
	for range b.N {
		select {
		case <-arrived:
		case <-timeout:
			b.Fatal("events did not arrive")
		}
	}
	elapsed := time.Since(start)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	mu.Lock()
	defer mu.Unlock()
	if len(lags) > 0 {
		slices.Sort(lags)
		b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "lag-p50-ms")
		b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "lag-p99-ms")
	}
}
