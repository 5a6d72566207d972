package identity

import (
	"io"
	"net/http"
)

// send sends req to the issuer, asking for JSON, and reads at most limit
// bytes of the answer, whatever its status (which the caller judges);
// resp's body is closed.
func send(client *http.Client, req *http.Request, limit int64) (resp *http.Response, body []byte, err error) {
	req.Header.Set("Accept", "application/json")
	resp, err = client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp, body, err
}
