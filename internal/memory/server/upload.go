package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/relaydev/relay/internal/base64stream"
	"github.com/relaydev/relay/internal/jsonstream"
	"github.com/relaydev/relay/internal/memory"
	"github.com/relaydev/relay/internal/memory/blob"
)

// jsonUploadLimit caps a JSON artifact upload's body for an artifact limit of l: room for the
// content escaped (typical text grows by well under 2×, base64 by 4/3) and for the metadata.
// For a store without a bucket it stays MaxArtifactJSON.
func jsonUploadLimit(l int64) int64 {
	if l <= memory.MaxArtifactSize {
		return MaxArtifactJSON
	}
	return MaxArtifactJSON + 2*l
}

// readJSONUpload reads a JSON artifact upload ({"content": …} or {"content_base64": …} with
// the metadata fields in any order) into p and the returned body. The content is unescaped
// as it arrives and spooled (to a temporary file above spoolThreshold), so a large upload is
// never whole in memory; the other fields are decoded by encoding/json as before.
func (s *Server) readJSONUpload(w http.ResponseWriter, r *http.Request, p *memory.PutArtifactParams) (*blob.Body, error) {
	limit := memory.ArtifactLimit(s.store)
	spools := map[string]*blob.Body{}
	closeAll := func() {
		for _, b := range spools {
			b.Close()
		}
	}
	var tooLarge bool
	var badBase64 error
	f := jsonstream.NewFilter(http.MaxBytesReader(w, r.Body, jsonUploadLimit(limit)), []string{"content", "content_base64"},
		func(field string, value io.Reader) error {
			// The string is at most as long as the request; base64 decodes to 3/4 of it, as
			// the body is read (the text is never held).
			size := r.ContentLength
			if field == "content_base64" {
				d := base64stream.NewDecoder(value)
				defer d.Close()
				value, size = d, size/4*3
			}
			b, err := blob.SpoolSized(value, limit, spoolThreshold, "", size)
			var ce base64.CorruptInputError
			switch {
			case errors.Is(err, blob.ErrTooLarge):
				tooLarge = true
			case field == "content_base64" && (errors.As(err, &ce) || errors.Is(err, io.ErrUnexpectedEOF)):
				badBase64 = err
			}
			if err != nil {
				return err
			}
			spools[field].Close() // a field named twice: encoding/json keeps the last
			spools[field] = b
			return nil
		})
	defer f.Close()
	var in struct {
		Name          string   `json:"name"`
		Type          string   `json:"type"`
		Content       *string  `json:"content"`
		ContentBase64 *string  `json:"content_base64"`
		CreatedBy     string   `json:"created_by"`
		Capability    string   `json:"capability"`
		SourceRefs    []string `json:"source_refs"`
	}
	err := decodeJSONFrom(f, &in)
	if err != nil {
		closeAll()
		var se *json.SyntaxError
		switch {
		case tooLarge:
			return nil, &memory.TooLargeError{What: "the artifact", Limit: limit}
		case badBase64 != nil:
			return nil, badRequest("content_base64 is not valid base64: %v", badBase64)
		case errors.As(err, &se):
			se.Offset = f.Offset(se.Offset)
		}
		return nil, jsonError(err)
	}
	p.Name, p.Type, p.CreatedBy, p.Capability, p.SourceRefs = in.Name, in.Type, in.CreatedBy, in.Capability, in.SourceRefs
	switch {
	case in.Content != nil && in.ContentBase64 != nil:
		closeAll()
		return nil, badRequest("send either content or content_base64, not both")
	case in.Content != nil:
		return spools["content"], nil
	case in.ContentBase64 != nil:
		return spools["content_base64"], nil
	}
	closeAll()
	return nil, badRequest("JSON artifact upload needs content (text) or content_base64; or send the raw bytes with Content-Type: application/octet-stream")
}
