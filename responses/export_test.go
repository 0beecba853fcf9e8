package responses

import (
	"fmt"
	"sync/atomic"
)

// SequentialIDs makes s give the ids prefix_0001, prefix_0002, ... (one
// counter for every prefix), so that golden files do not change from run
// to run.
func SequentialIDs(s *Service) {
	var n atomic.Int64
	s.newID = func(prefix string) string { return fmt.Sprintf("%s_%04d", prefix, n.Add(1)) }
}
