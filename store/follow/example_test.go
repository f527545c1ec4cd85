package follow_test

import (
	"context"
	"fmt"

	"github.com/edgeplane/edgeplane/memstore"
	"github.com/edgeplane/edgeplane/store"
	"github.com/edgeplane/edgeplane/store/follow"
)

// counter counts the records created, as a handler of the feed.
type counter struct {
	feed    store.Feed
	created int
}

func (c *counter) Resync(ctx context.Context) (int64, error) { return c.feed.Revision(ctx) }

func (c *counter) Apply(_ context.Context, b follow.Batch) error {
	for _, ch := range b.Changes {
		if ch.Op == store.OpCreate {
			c.created++
		}
	}
	return nil
}

func (c *counter) Failed(f follow.Failure) { fmt.Println("failed:", f.Step, f.Err) }

func ExampleStart() {
	ctx := context.Background()
	st := memstore.New()
	c := &counter{feed: st}
	f := follow.Start(st, c, 0, follow.Options{})
	for _, id := range []string{"r_1", "r_2", "r_3"} {
		if err := st.Create(ctx, store.Record{Kind: "k", AccountID: "a", ID: id, Data: []byte(`{}`)}); err != nil {
			panic(err)
		}
	}
	rev, _ := st.Revision(ctx)
	// Apply every change committed so far, then stop.
	if err := f.Drain(ctx, rev); err != nil {
		panic(err)
	}
	fmt.Println("created:", c.created)
	// Output: created: 3
}
