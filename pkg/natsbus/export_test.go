package natsbus

import "time"

// SetNow replaces the bus's clock (the consumer metrics' cache).
func SetNow(b *Bus, now func() time.Time) { b.now = now }
