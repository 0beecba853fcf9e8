package store

import "context"

// ViewValue runs fn in a View of s and returns fn's result, so that a read
// needs no variable captured by the closure. When fn or View fails it returns
// the zero T and View's error (fn's error unchanged, see Store).
func ViewValue[T any](ctx context.Context, s Store, fn func(Tx) (T, error)) (T, error) {
	return inTx(ctx, s.View, fn)
}

// UpdateValue runs fn in an Update of s and returns fn's result once the
// transaction is committed. When fn or Update fails it returns the zero T and
// Update's error (fn's error unchanged, see Store); nothing is written.
func UpdateValue[T any](ctx context.Context, s Store, fn func(Tx) (T, error)) (T, error) {
	return inTx(ctx, s.Update, fn)
}

// inTx runs fn in a transaction of run (a Store's View or Update) and returns
// fn's result, or the zero T and run's error.
func inTx[T any](ctx context.Context, run func(context.Context, func(Tx) error) error, fn func(Tx) (T, error)) (T, error) {
	var out T
	err := run(ctx, func(tx Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}
