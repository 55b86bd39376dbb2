package contracts

import "slices"

// Service says what one service does on NATS. Services is the one table of
// it: each service's NATS user and subject permissions (local stack, compose,
// tests) derive from it, so a new RPC or event is one line here, and a
// service can do nothing on the bus that the table does not say.
type Service struct {
	// Name is the service (binary) name, also its NATS user name.
	Name string
	// Serves are the RPC subjects it answers (base names, RPC* constants).
	Serves []string
	// Calls are the RPC subjects it requests.
	Calls []string
	// Publishes are the event types it publishes on StreamEvents.
	Publishes []string
	// Queues are the JetStream work subjects it publishes to (base
	// subjects, wildcards allowed), such as MailImportSubjects.
	Queues []string
	// Streams are the streams it declares (create, update, info).
	Streams []string
	// Consumers are the durable consumers it creates and reads: its
	// JetStream rights name each one's stream, durable name and filter,
	// and no other consumer on those streams.
	Consumers []Consumer
	// Buckets are the JetStream Object Store buckets it owns (base names,
	// Bucket* constants; Names.Stream gives the full bucket name): it
	// creates them, writes, reads and deletes objects in them, and may
	// touch no other bucket.
	Buckets []string
	// ReadsBuckets are other services' buckets it reads objects from (and
	// never writes or deletes).
	ReadsBuckets []string
	// OrderedConsumers are the ephemeral ordered consumers it opens (every
	// replica its own, with generated names): one filter each, so that
	// the server pins what they may read (orderedConsumerPermissions).
	OrderedConsumers []OrderedConsumer
}

// OrderedConsumer is one kind of ephemeral ordered consumer of a service:
// nats.go's jetstream.OrderedConsumer with exactly one filter subject.
type OrderedConsumer struct {
	Stream string // base stream name (Stream* constants)
	// Filter is the base filter subject (EventSubject(...), wildcards
	// allowed); never empty.
	Filter string
}

// Services is the table of every service that connects to NATS.
//
// Every service declares StreamEvents at start (pkg/boot), translation too,
// although it publishes nothing; drop it from Streams once only publishers
// declare the stream.
var Services = []Service{
	{
		Name:      "auth",
		Serves:    []string{RPCCustomerExists, RPCAccounts},
		Publishes: []string{EventPasswordResetRequested, EventPasswordChanged},
		Streams:   []string{StreamEvents},
	},
	{
		Name:   "topics",
		Serves: []string{RPCTopicNames, RPCTopicsAll, RPCTopicDocuments, RPCTopicActions},
		Publishes: []string{EventTopicCreated, EventTopicUpdated, EventTopicDeleted,
			EventTopicActionChanged, EventTopicDocumentChanged, EventPageMappingChanged},
		Streams: []string{StreamEvents},
	},
	{
		Name:    "translation",
		Calls:   []string{RPCCustomerExists},
		Streams: []string{StreamEvents},
	},
	{
		// HTTP of the mail context: channels, provider callbacks, toggles.
		Name:   "mailingest",
		Serves: []string{RPCChannel},
		// It relays the mail outbox: renewal's catch-up imports and the
		// import worker's reply delivery events.
		Publishes: []string{EventChannelCreated, EventChannelUpdated, EventChannelDeleted,
			EventReplyDelivered, EventReplyFailed},
		Queues:  []string{MailImportSubjects},
		Streams: []string{StreamEvents, StreamMailImport},
	},
	{
		// The scheduled subscription job. Its catch-up imports go through
		// the mail outbox, which mailingest relays.
		Name:    "renewal",
		Streams: []string{StreamEvents},
	},
	{
		// The mail import worker: folder imports from MAIL_IMPORT into
		// MAIL_INBOUND (attachment bytes in its bucket), and agents' replies
		// out by mail (message.reply.sent); its delivery events go through
		// the mail outbox, which mailingest relays.
		Name:    "importreply",
		Queues:  []string{MailInboundSubjects},
		Streams: []string{StreamEvents, StreamMailImport, StreamMailInbound},
		Consumers: []Consumer{
			{Stream: StreamMailImport, Durable: DurableImportWorker},
			{Stream: StreamEvents, Durable: DurableImportWorkerReplies, Filter: EventSubject(EventReplySent)},
		},
		Buckets: []string{BucketMailAttachments},
	},
	{
		// End users, tickets and their messages.
		Name:  "tickets",
		Calls: []string{RPCChannel, RPCTopicNames, RPCTopicActions, RPCAccounts, RPCTopicDocuments},
		Publishes: []string{EventEndUserCreated, EventEndUserUpdated, EventEndUserDeleted,
			EventTicketCreated, EventTicketUpdated, EventTicketDeleted,
			EventMessageCreated, EventMessageUpdated, EventMessageDeleted,
			EventTopicsAssigned, EventTopicDetectionRequested, EventTopicActionTriggered,
			EventMessageEscalated, EventReplySent, EventMessageVoted},
		Streams: []string{StreamEvents, StreamMailInbound},
		// Topic names follow topic.updated and topic.deleted; reply
		// deliveries follow message.reply.*; imported mail comes from
		// MAIL_INBOUND.
		Consumers: []Consumer{
			{Stream: StreamEvents, Durable: DurableTicketsTopics, Filter: EventSubject("topic.>")},
			{Stream: StreamEvents, Durable: DurableTicketsReplyDelivery, Filter: EventSubject("message.reply.>")},
			{Stream: StreamMailInbound, Durable: DurableTicketsMailInbound},
		},
		// Attachment bytes; imported mails' attachments are read from the
		// import worker's bucket.
		Buckets:      []string{BucketAttachments},
		ReadsBuckets: []string{BucketMailAttachments},
	},
	{
		// The AI assistant of the tickets context: topic detection and
		// prepared replies on new messages. Its events go through the
		// tickets outbox, which the tickets binary relays.
		Name:    "assistant",
		Calls:   []string{RPCTopicsAll, RPCTopicDocuments, RPCTopicActions, RPCTopicNames},
		Streams: []string{StreamEvents},
		Consumers: []Consumer{
			{Stream: StreamEvents, Durable: DurableAssistantMessages, Filter: EventSubject(EventMessageCreated)},
			{Stream: StreamEvents, Durable: DurableAssistantDetect, Filter: EventSubject(EventTopicDetectionRequested)},
		},
	},
	{
		// Live updates for the consoles: every replica reads the ticket,
		// message and end-user events of EVENTS with its own ordered
		// consumers (one per filter) and streams them to the consoles of
		// their customer. It never reads auth's or topics' events.
		Name:             "live",
		Streams:          []string{StreamEvents},
		OrderedConsumers: LiveConsumers,
	},
}

// LiveConsumers are the ordered consumers of the live service: the events
// it forwards to the consoles.
var LiveConsumers = []OrderedConsumer{
	{Stream: StreamEvents, Filter: EventSubject("ticket.>")},
	{Stream: StreamEvents, Filter: EventSubject("message.>")},
	{Stream: StreamEvents, Filter: EventSubject("end-user.>")},
}

// Consumer is one durable JetStream consumer of a service.
type Consumer struct {
	Stream  string // base stream name (Stream* constants)
	Durable string // base durable name (Durable* constants); Names.Stream gives the full one
	// Filter is the base filter subject (EventSubject(...), wildcards
	// allowed); empty: the whole stream.
	Filter string
}

// Durable consumer names (base names; Names.Stream gives the full name).
// The services create their consumers with exactly these names and
// filters, which is all their NATS users may create. The importreply
// binary's two keep the names they had when it was the import worker:
// renaming a durable would orphan the existing one and its delivery state.
const (
	DurableImportWorker         = "IMPORTWORKER"         // importreply: folder imports from MAIL_IMPORT
	DurableImportWorkerReplies  = "IMPORTWORKER_REPLIES" // importreply: message.reply.sent from EVENTS
	DurableTicketsTopics        = "TICKETS_TOPICS"       // tickets: topic.> from EVENTS
	DurableTicketsReplyDelivery = "TICKETS_REPLY_DELIVERY"
	DurableTicketsMailInbound   = "TICKETS_MAIL_INBOUND"
	DurableAssistantMessages    = "ASSISTANT_MESSAGES"
	DurableAssistantDetect      = "ASSISTANT_DETECT"
)

// LookupService returns the table entry named name.
func LookupService(name string) (Service, bool) {
	i := slices.IndexFunc(Services, func(s Service) bool { return s.Name == name })
	if i < 0 {
		return Service{}, false
	}
	return Services[i], true
}

// HarnessUser is the NATS user of test harnesses and operators' tools: it
// may observe and call everything under the deployment's prefix. No service
// runs as it.
const HarnessUser = "harness"

// Permissions are one NATS user's allowed subjects; everything else is
// denied. AllowResponses lets a responder publish one reply to the reply
// subject of each request it received, and nothing else there.
type Permissions struct {
	Publish   []string
	Subscribe []string
	// PublishDeny wins over Publish: the durable consumers of other
	// services that a wildcard of an ordered consumer would also match.
	PublishDeny    []string
	AllowResponses bool
}

// InboxPrefix is where replies to a client's requests (core requests and
// JetStream API answers) come back: one prefix per client name, so that a
// service may subscribe to its own replies and not to those meant for
// another (natsbus.Connect sets it from the client name).
func InboxPrefix(client string) string { return "_INBOX_" + client }

// jsAPI is JetStream's API prefix; it is not isolated by Names.Prefix.
const jsAPI = "$JS.API."

// Permissions derives s's NATS permissions under n's prefix: publish its
// events and the RPCs it calls, subscribe to the RPCs it serves, reply to
// requests, and use JetStream's API for its own streams and consumers only.
func (n Names) Permissions(s Service) Permissions {
	p := Permissions{
		Publish:        []string{jsAPI + "INFO"},
		Subscribe:      []string{InboxPrefix(s.Name) + ".>"},
		AllowResponses: len(s.Serves) > 0,
	}
	for _, ev := range s.Publishes {
		p.Publish = append(p.Publish, n.Subject(EventSubject(ev)))
	}
	for _, q := range s.Queues {
		p.Publish = append(p.Publish, n.Subject(q))
	}
	for _, rpc := range s.Calls {
		p.Publish = append(p.Publish, n.Subject(rpc))
	}
	for _, rpc := range s.Serves {
		p.Subscribe = append(p.Subscribe, n.Subject(rpc))
	}
	for _, st := range s.Streams {
		name := n.Stream(st)
		for _, op := range []string{"CREATE", "UPDATE", "INFO"} {
			p.Publish = append(p.Publish, jsAPI+"STREAM."+op+"."+name)
		}
	}
	for _, c := range s.Consumers {
		p.Publish = append(p.Publish, n.consumerPermissions(c)...)
	}
	for _, b := range s.Buckets {
		p.Publish = append(p.Publish, n.bucketPermissions(b)...)
	}
	for _, b := range s.ReadsBuckets {
		p.Publish = append(p.Publish, n.bucketReadPermissions(b)...)
	}
	for _, c := range s.OrderedConsumers {
		allow, deny := n.orderedConsumerPermissions(c)
		p.Publish = appendNew(p.Publish, allow...)
		p.PublishDeny = appendNew(p.PublishDeny, deny...)
	}
	return p
}

// appendNew appends the elements of add that out does not hold yet.
func appendNew(out []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// orderedConsumerPermissions are what nats.go's ordered pull consumer with
// one filter does: create consumers of generated names with the API subject
// that carries the filter (the server refuses a config whose filter differs
// from the subject's, and a multi-filter config on that form, so the filter
// is pinned); pull, read the info of and delete consumers of generated
// names (on a reset it deletes the old one and creates the next). A name is
// one token and NATS has no partial-token wildcard, so the names are `*`,
// and every durable consumer of the table on that stream is denied: the
// service cannot pull from, inspect, reconfigure or delete another
// service's consumer.
func (n Names) orderedConsumerPermissions(c OrderedConsumer) (allow, deny []string) {
	stream := n.Stream(c.Stream)
	allow = []string{
		jsAPI + "CONSUMER.CREATE." + stream + ".*." + n.Subject(c.Filter),
		jsAPI + "CONSUMER.MSG.NEXT." + stream + ".*",
		jsAPI + "CONSUMER.INFO." + stream + ".*",
		jsAPI + "CONSUMER.DELETE." + stream + ".*",
	}
	for _, s := range Services {
		for _, d := range s.Consumers {
			if d.Stream != c.Stream {
				continue
			}
			durable := n.Stream(d.Durable)
			deny = append(deny,
				jsAPI+"CONSUMER.CREATE."+stream+"."+durable+".>",
				jsAPI+"CONSUMER.MSG.NEXT."+stream+"."+durable,
				jsAPI+"CONSUMER.INFO."+stream+"."+durable,
				jsAPI+"CONSUMER.DELETE."+stream+"."+durable,
			)
		}
	}
	return allow, deny
}

// consumerPermissions are what creating and reading one durable consumer
// takes, naming its stream, durable and filter. A consumer with a filter may
// be created only with the API subject that carries the filter
// (CONSUMER.CREATE.<stream>.<durable>.<filter>, nats-server 2.9+, which
// refuses a request whose configured filter differs from the subject's):
// the forms without it (CONSUMER.CREATE.<stream>.<durable> and the older
// CONSUMER.DURABLE.CREATE.<stream>.<durable>) would take any filter, so
// they are allowed only for a consumer of the whole stream. A filter with a
// wildcard allows the narrower filters under it, nothing outside.
func (n Names) consumerPermissions(c Consumer) []string {
	stream, durable := n.Stream(c.Stream), n.Stream(c.Durable)
	var out []string
	if c.Filter != "" {
		out = append(out, jsAPI+"CONSUMER.CREATE."+stream+"."+durable+"."+n.Subject(c.Filter))
	} else {
		out = append(out, jsAPI+"CONSUMER.CREATE."+stream+"."+durable, jsAPI+"CONSUMER.DURABLE.CREATE."+stream+"."+durable)
	}
	return append(out,
		jsAPI+"CONSUMER.INFO."+stream+"."+durable,
		jsAPI+"CONSUMER.MSG.NEXT."+stream+"."+durable,
		"$JS.ACK."+stream+"."+durable+".>",
	)
}

// BucketAttachments is the Object Store bucket of the tickets service's
// message attachments.
const BucketAttachments = "ATTACHMENTS"

// ObjectStream is the name of the stream behind an Object Store bucket
// (nats.go's OBJ_<bucket>).
func ObjectStream(bucket string) string { return "OBJ_" + bucket }

// bucketPermissions are what nats.go's Object Store does with one bucket
// (base name b): declare its stream; publish chunks and metadata on
// $O.<bucket>.>; read metadata with direct gets (STREAM.MSG.GET when
// direct gets are off); read chunks with an ordered push consumer, which
// is created, recreated after a gap and deleted, and whose flow-control
// requests are answered on $JS.FC; purge an object's subjects to delete
// it. The replies come to the service's own inbox (already allowed).
// Nothing here names another bucket, and deleting the stream is not
// allowed.
func (n Names) bucketPermissions(b string) []string {
	bucket := n.Stream(b)
	stream := ObjectStream(bucket)
	var out []string
	for _, op := range []string{"CREATE", "UPDATE", "INFO", "PURGE", "MSG.GET"} {
		out = append(out, jsAPI+"STREAM."+op+"."+stream)
	}
	return append(out,
		jsAPI+"DIRECT.GET."+stream, jsAPI+"DIRECT.GET."+stream+".>",
		jsAPI+"CONSUMER.CREATE."+stream, jsAPI+"CONSUMER.CREATE."+stream+".>",
		jsAPI+"CONSUMER.DELETE."+stream+".>", jsAPI+"CONSUMER.INFO."+stream+".>",
		"$JS.FC."+stream+".>",
		"$O."+bucket+".>",
	)
}

// bucketReadPermissions are what reading objects of bucket b takes: the
// stream's info, metadata gets and the ordered consumer of the chunks; no
// publish on $O.<bucket>, no purge.
func (n Names) bucketReadPermissions(b string) []string {
	stream := ObjectStream(n.Stream(b))
	return []string{
		jsAPI + "STREAM.INFO." + stream, jsAPI + "STREAM.MSG.GET." + stream,
		jsAPI + "DIRECT.GET." + stream, jsAPI + "DIRECT.GET." + stream + ".>",
		jsAPI + "CONSUMER.CREATE." + stream, jsAPI + "CONSUMER.CREATE." + stream + ".>",
		jsAPI + "CONSUMER.DELETE." + stream + ".>", jsAPI + "CONSUMER.INFO." + stream + ".>",
		"$JS.FC." + stream + ".>",
	}
}

// HarnessPermissions are the harness user's: publish everything under the
// prefix (every prefix when it is empty) and to JetStream's whole API, and
// subscribe to anything (it observes events and gets replies in the inboxes
// of clients of any name).
func (n Names) HarnessPermissions() Permissions {
	return Permissions{
		Publish:        []string{n.Subject(">"), "$JS.API.>", "$JS.ACK.>"},
		Subscribe:      []string{">"},
		AllowResponses: true,
	}
}
