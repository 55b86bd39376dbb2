package mail

// LimiterSize and CacheSize expose the notifier's bounded maps to the
// external tests: keys (entries) and estimated bytes.
func (n *Notifier) LimiterSize() (keys, bytes int)  { return n.limiter.size() }
func (n *Notifier) CacheSize() (entries, bytes int) { return n.cache.size() }
