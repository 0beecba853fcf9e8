package quota

// Ticket is one admitted request's hold on its budget. The first call of Settle
// or Cancel ends it; later calls do nothing. A nil *Ticket (no budget for the
// alias) is valid and all its methods do nothing. A Ticket is safe for
// concurrent use.
type Ticket struct {
	s        *shardState // whose mutex guards c and done
	c        *counter    // the counter of the day the request was admitted on
	reserved int64
	done     bool
}

// Settle ends the ticket with the request's real usage: usedTokens (the
// upstream's usage.total_tokens) replaces the reservation, whether it is lower or
// higher. A negative usedTokens means the usage is unknown and charges the whole
// reservation. The request stays counted.
func (t *Ticket) Settle(usedTokens int64) {
	if t == nil {
		return
	}
	if usedTokens < 0 {
		usedTokens = t.reserved
	}
	t.end(usedTokens)
}

// Cancel ends the ticket of a request whose upstream call failed before any
// answer reached the client: the reservation is released and no tokens are
// charged, but the request stays counted against requests_per_day.
func (t *Ticket) Cancel() {
	if t == nil {
		return
	}
	t.end(0)
}

// end releases the reservation and charges used tokens, once.
func (t *Ticket) end(used int64) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	t.c.reserved -= t.reserved
	t.c.tokens += used
}
