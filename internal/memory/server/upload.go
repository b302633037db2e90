package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"

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
	f := jsonstream.NewFilter(http.MaxBytesReader(w, r.Body, jsonUploadLimit(limit)), []string{"content", "content_base64"},
		func(field string, value io.Reader) error {
			max := limit
			if field == "content_base64" {
				max = 2*limit + 4 // the text; its decoded bytes are held to limit below
			}
			b, err := blob.Spool(value, max, spoolThreshold, "")
			if errors.Is(err, blob.ErrTooLarge) {
				tooLarge = true
			}
			if err != nil {
				return err
			}
			spools[field].Close() // a field named twice: encoding/json keeps the last
			spools[field] = b
			return nil
		})
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
		case errors.As(err, &se):
			se.Offset = f.Offset(se.Offset)
		}
		return nil, jsonError(err)
	}
	p.Name, p.Type, p.CreatedBy, p.Capability, p.SourceRefs = in.Name, in.Type, in.CreatedBy, in.Capability, in.SourceRefs
	content, text := spools["content"], spools["content_base64"]
	switch {
	case in.Content != nil && in.ContentBase64 != nil:
		closeAll()
		return nil, badRequest("send either content or content_base64, not both")
	case in.Content != nil:
		text.Close()
		return content, nil
	case in.ContentBase64 != nil:
		content.Close()
		defer text.Close()
		b, err := blob.Spool(base64.NewDecoder(base64.StdEncoding, text.Reader()), limit, spoolThreshold, "")
		var ce base64.CorruptInputError
		switch {
		case errors.Is(err, blob.ErrTooLarge):
			return nil, &memory.TooLargeError{What: "the artifact", Limit: limit}
		case errors.As(err, &ce), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, badRequest("content_base64 is not valid base64: %v", err)
		case err != nil:
			return nil, err
		}
		return b, nil
	}
	closeAll()
	return nil, badRequest("JSON artifact upload needs content (text) or content_base64; or send the raw bytes with Content-Type: application/octet-stream")
}
