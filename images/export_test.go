package images

import "context"

// PurgeRound runs one round of s's purger, as its ticker does: it purges if
// s holds, or can take, the purge lease, and reports whether it did.
func PurgeRound(ctx context.Context, s *Service) bool { return s.purger.Round(ctx) }
