package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Chain is several classifiers asked together (gatewayd's chain of the
// configured classifiers: "flagged by any is flagged"). It is a Classifier, safe for
// concurrent use when its members are.
//
// Classify asks every member concurrently, on the caller's ctx, and waits for
// all of them. The verdict is flagged when any member flags: its Categories
// are every member's, member by member in chain order (Param dedupes the
// names). When some member fails, Classify returns the verdict of the members
// that answered together with an error that joins (errors.Join) the failures,
// so that errors.Is finds ErrUnavailable, ErrMalformed or
// context.DeadlineExceeded in it. The caller's policy decides, and a flagged
// partial verdict is already conclusive: flagged by any is flagged, so a block
// tenant can be refused with content_blocked whatever the failed member would
// have said, while a clean partial verdict proves nothing (block fails
// closed, audit fails open). A member that panics counts as failed.
//
// An empty Chain flags nothing; a Chain of one is that classifier.
type Chain []Classifier

var _ Classifier = Chain(nil)

// Classify asks every classifier of the chain; see Chain.
func (ch Chain) Classify(ctx context.Context, in Input) (Verdict, error) {
	switch len(ch) {
	case 0:
		return Verdict{}, nil
	case 1:
		return ch[0].Classify(ctx, in)
	}
	type result struct {
		v   Verdict
		err error
	}
	results := make([]result, len(ch))
	var wg sync.WaitGroup
	for i, c := range ch {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					results[i].err = fmt.Errorf("guard: classifier %d of the chain panicked: %v", i, p)
				}
			}()
			results[i].v, results[i].err = c.Classify(ctx, in)
		})
	}
	wg.Wait()
	var v Verdict
	var errs []error
	for _, r := range results {
		v.Categories = append(v.Categories, r.v.Categories...)
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return v, errors.Join(errs...)
}
