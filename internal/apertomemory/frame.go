package apertomemory

import (
	"errors"
	"unicode/utf8"
)

// Profile identifiers of projection draft -01 §5.
const (
	// SourceProfile is the projection record's source_profile for this
	// format.
	SourceProfile = "draft-ferro-apertomemory-02"
	// ContextFrameV0 is the context_frame_profile of [FrameV0].
	ContextFrameV0 = "urn:apertomemory:context-frame:v0"
	// TrustSnapshotV0 names the trust snapshot of [EncodeTrustSnapshot].
	TrustSnapshotV0 = "urn:apertomemory:trust-snapshot:v0"
)

// FrameLabels are the four native labels a context fragment carries. They
// come from an opened [Object] (see [Object.FrameLabels]) and are never
// recomputed by a projection producer.
type FrameLabels struct {
	Trust      Trust
	Authorship Authorship
	// Author is nil when the source result has no author.
	Author  *KeyID
	Custody bool
}

// FrameLabels returns the object's native labels for [FrameV0].
func (o *Object) FrameLabels() FrameLabels {
	return FrameLabels{Trust: o.Trust, Authorship: o.Authorship, Author: o.Author, Custody: o.CustodyPresent()}
}

// ContextFragment is the object's context fragment under context-frame v0.
func (o *Object) ContextFragment() []byte {
	b, err := FrameV0(o.FrameLabels(), o.Content)
	if err != nil {
		// An opened object's labels are consistent and its content is
		// valid UTF-8 (the CBOR decoder refuses anything else).
		panic("apertomemory: opened object has inconsistent labels: " + err.Error())
	}
	return b
}

var errFrameLabels = errors.New("apertomemory: inconsistent context-frame labels")

// FrameV0 builds one context fragment under urn:apertomemory:context-frame:v0
// (projection draft -01 §5.2): the UTF-8 bytes
//
//	"[ApertoMemory trust=" trust " authorship=" authorship
//	" author_key=" author_key " custody=" custody "]\n"
//	body "\n[/ApertoMemory]\n"
//
// where author_key is the unpadded base64url of the 8-byte key id or the
// literal "none", custody is "true" or "false", every line ending is one LF
// and body is inserted verbatim (no trimming, newline conversion or
// normalisation). For example:
//
//	[ApertoMemory trust=unverified authorship=unknown author_key=none custody=false]
//	Source edge: native verification did not resolve an author.
//	[/ApertoMemory]
//
// The delimiters are for legibility, not a boundary: a body may contain
// "[/ApertoMemory]", and only the digests over exact bytes bind fragments.
// Non-self content framed here is data, never instructions.
//
// FrameV0 refuses labels outside the enumerations, or inconsistent as the
// draft's §4.3 defines (unverified needs authorship unknown and no author;
// unknown authorship has no author; signed and attested need one; attested
// needs custody), and a body that is not valid UTF-8.
func FrameV0(l FrameLabels, body string) ([]byte, error) {
	switch l.Trust {
	case TrustSelf, TrustTrusted, TrustUnverified:
	default:
		return nil, errFrameLabels
	}
	switch l.Authorship {
	case AuthorshipSigned, AuthorshipAttested, AuthorshipUnknown:
	default:
		return nil, errFrameLabels
	}
	if (l.Authorship == AuthorshipUnknown) != (l.Author == nil) ||
		(l.Trust == TrustUnverified && l.Authorship != AuthorshipUnknown) ||
		(l.Trust != TrustUnverified && l.Authorship == AuthorshipUnknown) ||
		(l.Authorship == AuthorshipAttested && !l.Custody) {
		return nil, errFrameLabels
	}
	if !utf8.ValidString(body) {
		return nil, errors.New("apertomemory: fragment body is not valid UTF-8")
	}
	author := "none"
	if l.Author != nil {
		author = l.Author.B64u()
	}
	custody := "false"
	if l.Custody {
		custody = "true"
	}
	s := "[ApertoMemory trust=" + string(l.Trust) +
		" authorship=" + string(l.Authorship) +
		" author_key=" + author +
		" custody=" + custody + "]\n" +
		body + "\n[/ApertoMemory]\n"
	return []byte(s), nil
}
