package holistic

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/holistic-eval/holistic/clients/go/gen/holistic/v1"
)

// ContentBatchID derives a batch id from the content, byte for byte as the Python and Node clients do:
// "c-" and the first 32 hex digits of the SHA-256 of SubmitPredictionsRequest{model, predictions} as
// Python's protobuf (upb) serializes it with deterministic=True. Re-sending the same predictions is
// then a no-op, from any of the three languages.
func ContentBatchID(model string, predictions []*pb.Prediction) (string, error) {
	body, err := appendDeterministic(nil, (&pb.SubmitPredictionsRequest{Model: model, Predictions: predictions}).ProtoReflect())
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(body)
	return "c-" + hex.EncodeToString(sum[:])[:32], nil
}

// upbKeyLess is the order in which upb writes string map keys: byte order, except that a key which is
// a prefix of another comes after it ("ab" before "a", "" last). Go's own deterministic order puts the
// prefix first, so the maps are written here rather than by proto.Marshal.
func upbKeyLess(a, b string) bool {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	if a[:n] != b[:n] {
		return a[:n] < b[:n]
	}
	return len(a) > len(b)
}

// appendDeterministic appends m's wire encoding: fields in number order, each as proto.Marshal writes
// it alone, messages recursively, map<string, string> entries in upb's key order.
func appendDeterministic(b []byte, m protoreflect.Message) ([]byte, error) {
	fields := m.Descriptor().Fields()
	ordered := make([]protoreflect.FieldDescriptor, fields.Len())
	for i := range ordered {
		ordered[i] = fields.Get(i)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].Number() < ordered[j].Number() })
	var err error
	for _, fd := range ordered {
		if !m.Has(fd) {
			continue
		}
		switch {
		case fd.IsMap():
			if b, err = appendStringMap(b, fd, m.Get(fd).Map()); err != nil {
				return nil, err
			}
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			list := m.Get(fd).List()
			for i := 0; i < list.Len(); i++ {
				if b, err = appendSubmessage(b, fd.Number(), list.Get(i).Message()); err != nil {
					return nil, err
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if b, err = appendSubmessage(b, fd.Number(), m.Get(fd).Message()); err != nil {
				return nil, err
			}
		case fd.Kind() == protoreflect.GroupKind:
			return nil, fmt.Errorf("batch id: group field %s is not supported", fd.FullName())
		default: // a scalar, an enum or a list of them
			alone := m.Type().New()
			alone.Set(fd, m.Get(fd))
			enc, err := proto.MarshalOptions{Deterministic: true}.Marshal(alone.Interface())
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
	}
	return append(b, m.GetUnknown()...), nil
}

func appendSubmessage(b []byte, number protoreflect.FieldNumber, m protoreflect.Message) ([]byte, error) {
	body, err := appendDeterministic(nil, m)
	if err != nil {
		return nil, err
	}
	return protowire.AppendBytes(protowire.AppendTag(b, number, protowire.BytesType), body), nil
}

func appendStringMap(b []byte, fd protoreflect.FieldDescriptor, m protoreflect.Map) ([]byte, error) {
	if fd.MapKey().Kind() != protoreflect.StringKind || fd.MapValue().Kind() != protoreflect.StringKind {
		return nil, fmt.Errorf("batch id: only map<string, string> is supported (%s)", fd.FullName())
	}
	values := map[string]string{}
	keys := make([]string, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		keys = append(keys, k.String())
		values[k.String()] = v.String()
		return true
	})
	sort.Slice(keys, func(i, j int) bool { return upbKeyLess(keys[i], keys[j]) })
	for _, k := range keys { // an entry always carries its key (1) and value (2), even when empty
		entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
		entry = protowire.AppendString(protowire.AppendTag(entry, 2, protowire.BytesType), values[k])
		b = protowire.AppendBytes(protowire.AppendTag(b, fd.Number(), protowire.BytesType), entry)
	}
	return b, nil
}
