package guard

import "slices"

// Namer is implemented by a classifier that says what it is called on the
// wire (Category.Classifier) and in the tenant configuration: the
// classifiers of this package answer ClassifierRules, ClassifierModeration or
// ClassifierLlamaGuard. An embedder's classifier may implement it too.
type Namer interface {
	Name() string
}

// Custom is what Names calls a classifier that does not implement Namer.
const Custom = "custom"

// Names returns the names of the classifiers c is made of, sorted and
// without duplicates: those of a Chain's members, through WithTimeout and
// Cached, each Namer's Name and Custom for any other classifier. It is what
// the tenant configuration shows as the classifiers guarding a tenant; a nil
// c has none.
func Names(c Classifier) []string {
	var names []string
	var walk func(Classifier)
	walk = func(c Classifier) {
		switch c := c.(type) {
		case nil:
		case Chain:
			for _, m := range c {
				walk(m)
			}
		case *timeout:
			walk(c.c)
		case *cache:
			walk(c.c)
		case Namer:
			names = append(names, c.Name())
		default:
			names = append(names, Custom)
		}
	}
	walk(c)
	slices.Sort(names)
	return slices.Compact(names)
}

// Name returns ClassifierRules.
func (r *Rules) Name() string { return ClassifierRules }

// Name returns ClassifierRules.
func (f *RulesFile) Name() string { return ClassifierRules }

// Name returns ClassifierModeration.
func (m *Moderation) Name() string { return ClassifierModeration }

// Name returns ClassifierLlamaGuard.
func (g *LlamaGuard) Name() string { return ClassifierLlamaGuard }

// Versioned is implemented by a classifier whose verdicts change when its
// configuration is reloaded: Version changes with each reload (RulesFile
// counts its reloads), so that Cached forgets the verdicts of the old one.
type Versioned interface {
	Version() uint64
}

// Version returns the sum of the Versions of the classifiers c is made of
// (through Chain, WithTimeout and Cached; 0 for one that is not Versioned).
// Versions only grow, so the sum changes whenever one member's does.
func Version(c Classifier) uint64 {
	switch c := c.(type) {
	case Chain:
		var sum uint64
		for _, m := range c {
			sum += Version(m)
		}
		return sum
	case *timeout:
		return Version(c.c)
	case *cache:
		return Version(c.c)
	case Versioned:
		return c.Version()
	}
	return 0
}

// Version returns how many times the rules were reloaded.
func (f *RulesFile) Version() uint64 { return f.reloads.Load() }
