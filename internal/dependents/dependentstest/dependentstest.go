// Package dependentstest helps the unit tests of the code that finds
// dependents: it registers dependents.Index's cache indexes on a fake
// client, as the manager's field indexer registers them on the cache.
package dependentstest

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Indexer is a client.FieldIndexer that adds each index to b: pass it to
// dependents.Index.Register before b builds the client.
func Indexer(b *fake.ClientBuilder) client.FieldIndexer { return builderIndexer{b} }

type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	i.b.WithIndex(obj, field, fn)
	return nil
}
