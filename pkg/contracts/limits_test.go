package contracts

import "testing"

// Every stream and bucket has limits, a byte cap above all.
func TestEveryStreamHasLimits(t *testing.T) {
	var sum int64
	for _, base := range []string{StreamEvents, StreamMailImport, StreamMailInbound, BucketAttachments, BucketMailAttachments} {
		l, ok := Limits(base)
		if !ok || l.MaxBytes <= 0 || l.MaxMsgs == 0 || l.MaxMsgSize == 0 {
			t.Errorf("%s: limits %+v", base, l)
		}
		sum += l.MaxBytes
	}
	if len(LimitedStreams()) != len(streamLimits) || sum != StorageReserved() {
		t.Fatalf("%d limited streams listed of %d; reserved %d, sum %d", len(LimitedStreams()), len(streamLimits), StorageReserved(), sum)
	}
	for _, base := range LimitedStreams() {
		if _, ok := Limits(base); !ok {
			t.Errorf("%s listed without limits", base)
		}
	}
}
