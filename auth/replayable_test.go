package auth

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// A token POST sent on a kept-alive connection that the authorization
// server closes as it comes (node closes idle ones after 5 s) is sent
// again on a new connection: the exchange is not lost to "connection
// reset by peer" or EOF. The server here answers the first request of
// each connection, and closes one that brings a second without an answer.
func TestSafeClientSendsAPostAgainOnABrokenKeptAliveConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if n > 0 { // the second request on a kept-alive connection: closed unanswered
						c.(*net.TCPConn).SetLinger(0)
						return
					}
					body := `{"access_token":"t","token_type":"Bearer"}`
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
				}
			}()
		}
	}()
	client := SafeClient()
	u := "http://" + ln.Addr().String() + "/token"
	for i := range 3 {
		resp, err := client.PostForm(u, url.Values{"grant_type": {"authorization_code"}, "code": {"c"}})
		if err != nil {
			t.Fatalf("token POST %d: %v", i+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "access_token") {
			t.Fatalf("token POST %d: %s", i+1, b)
		}
	}
}
