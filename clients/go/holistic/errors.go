package holistic

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FieldViolation is one entry of a google.rpc.BadRequest: the field path and why it was refused,
// e.g. {"predictions[3].confidence", "must be a probability in [0, 1], got 2.0"}.
type FieldViolation struct {
	Field       string
	Description string
}

// Error is a failed call with its gRPC code and the google.rpc details (BadRequest, RetryInfo,
// QuotaFailure) decoded from the status. INVALID_ARGUMENT carries its field violations.
type Error struct {
	Code       codes.Code
	Message    string
	Details    []interface{}
	Violations []FieldViolation
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", codeName(e.Code), e.Message)
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "\n  %s: %s", v.Field, v.Description)
	}
	return b.String()
}

// connectFailure is how gRPC words a connection that was never made (refused, unknown host, no route,
// TLS): the gateway was not reached, as opposed to a gateway that answered UNAVAILABLE.
var connectFailure = regexp.MustCompile(`(?i)error while dialing|connection refused|no such host|no route to host|network is unreachable|handshake|i/o timeout`)

// UnreachableError is a gateway that could not be reached at all: the address and the cause.
type UnreachableError struct {
	Target string
	Cause  string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("UNAVAILABLE: cannot reach the gateway at %s: %s (is it running? --wait-for-ready waits for it)",
		e.Target, e.Cause)
}

// unreachable returns an *UnreachableError for an UNAVAILABLE that says the connection was never made.
func unreachable(target string, err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable || !connectFailure.MatchString(st.Message()) {
		return nil
	}
	msg := strings.TrimRight(st.Message(), `"`)
	cause := strings.TrimSpace(msg[strings.LastIndex(msg, ": ")+1:])
	if cause != "" {
		cause = strings.ToUpper(cause[:1]) + cause[1:] // "Connection refused", as the other clients say
	}
	return &UnreachableError{Target: target, Cause: cause}
}

// CodeName is the code as the other clients spell it: "INVALID_ARGUMENT", "NOT_FOUND", ...
func (e *Error) CodeName() string { return codeName(e.Code) }

// IsInvalid reports whether err is an INVALID_ARGUMENT from the gateway (violations, if any, in v).
func IsInvalid(err error) (violations []FieldViolation, ok bool) {
	var e *Error
	if errors.As(err, &e) && e.Code == codes.InvalidArgument {
		return e.Violations, true
	}
	return nil, false
}

// FromError turns a gRPC error into an *Error with its details decoded; other errors pass through.
func FromError(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	out := &Error{Code: st.Code(), Message: st.Message(), Details: st.Details()}
	if st.Code() == codes.InvalidArgument {
		for _, d := range out.Details {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					out.Violations = append(out.Violations, FieldViolation{v.GetField(), v.GetDescription()})
				}
			}
		}
	}
	return out
}

// RetryDelay is the server's google.rpc.RetryInfo delay; ok is false when the status carries none.
func RetryDelay(err error) (delay time.Duration, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus {
		return 0, false
	}
	for _, d := range st.Details() {
		if info, isInfo := d.(*errdetails.RetryInfo); isInfo && info.GetRetryDelay() != nil {
			rd := info.GetRetryDelay()
			return time.Duration(rd.GetSeconds())*time.Second + time.Duration(rd.GetNanos()), true
		}
	}
	return 0, false
}

func codeName(c codes.Code) string {
	// codes.Code.String() gives "InvalidArgument"; the gRPC spec and the other clients say INVALID_ARGUMENT.
	var b strings.Builder
	prev := rune(0)
	for _, r := range c.String() {
		if r >= 'A' && r <= 'Z' && prev >= 'a' && prev <= 'z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.ToUpper(b.String())
}
