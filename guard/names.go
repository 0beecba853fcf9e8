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
