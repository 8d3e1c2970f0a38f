// Package alert sends alerts through alert channels: a webhook (JSON, or a
// Slack- or Teams-compatible body), email over SMTP (STARTTLS, implicit
// TLS, or plain on a trusted network; with auth) and a script run on the
// master's host. Channels are validated here for the API and sent here for
// the master.
package alert

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/beluga-scheduler/beluga/common/events"
)

// SealContext binds a channel's sealed secret to its name (common/secret
// SealFor).
func SealContext(channel string) string { return "alert-channel:" + channel }

// Channel kinds.
const (
	Webhook = "webhook"
	Email   = "email"
	Script  = "script"
)

// Config is a channel's settings; which fields apply depends on Kind. The
// secret (an email password, a webhook's signing key) is kept apart,
// sealed.
type Config struct {
	// webhook
	URL    string `json:"url,omitempty"`
	Format string `json:"format,omitempty"` // json (default), slack, teams
	// email
	Host     string   `json:"host,omitempty"`
	Port     int      `json:"port,omitempty"`
	TLS      string   `json:"tls,omitempty"` // starttls (default), tls, none
	Username string   `json:"username,omitempty"`
	From     string   `json:"from,omitempty"`
	To       []string `json:"to,omitempty"`
	// InsecureSkipVerify skips the server certificate check (tests, private CAs).
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
	// script
	Command string `json:"command,omitempty"`
}

// Check validates a channel of kind with c.
func Check(kind string, c Config) error {
	switch kind {
	case Webhook:
		u, err := url.Parse(c.URL)
		if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("webhook: url %q must be an absolute http or https URL", c.URL)
		}
		switch c.Format {
		case "", "json", "slack", "teams":
		default:
			return fmt.Errorf("webhook: format %q: use json, slack or teams", c.Format)
		}
	case Email:
		if c.Host == "" || strings.ContainsAny(c.Host, " /:") {
			return fmt.Errorf("email: host %q must be a host name or address (port apart)", c.Host)
		}
		if c.Port < 0 || c.Port > 65535 {
			return fmt.Errorf("email: port %d is out of range", c.Port)
		}
		switch c.TLS {
		case "", "starttls", "tls", "none":
		default:
			return fmt.Errorf("email: tls %q: use starttls, tls or none", c.TLS)
		}
		if _, err := mail.ParseAddress(c.From); err != nil {
			return fmt.Errorf("email: from %q: %v", c.From, err)
		}
		if len(c.To) == 0 || len(c.To) > 50 {
			return errors.New("email: to: name 1 to 50 recipients")
		}
		for _, to := range c.To {
			if _, err := mail.ParseAddress(to); err != nil {
				return fmt.Errorf("email: to %q: %v", to, err)
			}
		}
	case Script:
		if strings.TrimSpace(c.Command) == "" || strings.ContainsRune(c.Command, 0) {
			return errors.New("script: command is required (and has no NUL byte)")
		}
	default:
		return fmt.Errorf("kind %q: use webhook, email or script", kind)
	}
	return nil
}

// Message is one alert.
type Message struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"` // failure, success, timeout, retry, deadline, summary, test
	Project    string    `json:"project,omitempty"`
	Workflow   string    `json:"workflow,omitempty"`
	InstanceID int64     `json:"instance_id,omitempty"`
	Text       string    `json:"text"`
	Time       time.Time `json:"time"`
}

// Subject is the one-line summary (email subject, chat title).
func (m Message) Subject() string {
	s := "[beluga] " + m.Kind
	if m.Workflow != "" {
		s += ": " + m.Project + "/" + m.Workflow
	}
	if m.InstanceID != 0 {
		s += " #" + strconv.FormatInt(m.InstanceID, 10)
	}
	return s
}

// Sender sends messages; the zero value uses defaults.
type Sender struct {
	Client *http.Client // webhooks (default 10 s timeout)
	// Timeout bounds an email or a script (default 30 s).
	Timeout time.Duration
}

// Send delivers m through a channel of kind with c and its secret.
func (s Sender) Send(ctx context.Context, kind string, c Config, secret string, m Message) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch kind {
	case Webhook:
		return s.webhook(ctx, c, secret, m)
	case Email:
		return sendEmail(ctx, c, secret, m)
	case Script:
		return runScript(ctx, c, m)
	}
	return fmt.Errorf("unknown channel kind %q", kind)
}

func (s Sender) webhook(ctx context.Context, c Config, secret string, m Message) error {
	var body any = m
	text := m.Subject() + "\n" + m.Text
	switch c.Format {
	case "slack":
		body = map[string]string{"text": text}
	case "teams": // the MessageCard form incoming webhooks take
		body = map[string]string{"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": m.Subject(), "title": m.Subject(), "text": m.Text}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(events.SignatureHeader, events.Sign([]byte(secret), time.Now(), b))
	}
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return nil
}

func sendEmail(ctx context.Context, c Config, password string, m Message) error {
	port := c.Port
	if port == 0 {
		port = 587
		if c.TLS == "tls" {
			port = 465
		}
	}
	addr := net.JoinHostPort(c.Host, strconv.Itoa(port))
	tc := &tls.Config{ServerName: c.Host, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // opt-in per channel
	var (
		cl  *smtp.Client
		err error
	)
	switch c.TLS {
	case "tls":
		cl, err = smtp.DialTLS(addr, tc)
	case "none":
		cl, err = smtp.Dial(addr)
	default:
		cl, err = smtp.DialStartTLS(addr, tc)
	}
	if err != nil {
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	defer cl.Close()
	if dl, ok := ctx.Deadline(); ok {
		cl.CommandTimeout, cl.SubmissionTimeout = time.Until(dl), time.Until(dl)
	}
	if c.Username != "" {
		if err := cl.Auth(sasl.NewPlainClient("", c.Username, password)); err != nil {
			return fmt.Errorf("smtp auth as %s: %w", c.Username, err)
		}
	}
	from, _ := mail.ParseAddress(c.From)
	to := make([]string, len(c.To))
	for i, t := range c.To {
		a, _ := mail.ParseAddress(t)
		to[i] = a.Address
	}
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n",
		from.String(), strings.Join(c.To, ", "), oneLine(m.Subject()), m.Time.Format(time.RFC1123Z),
		strings.ReplaceAll(m.Text, "\n", "\r\n"))
	if err := cl.SendMail(from.Address, to, &msg); err != nil {
		return fmt.Errorf("smtp send: %w", err)
	}
	return cl.Quit()
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// runScript runs the channel's command with sh -c on this host: the alert
// as JSON on stdin and as BELUGA_ALERT_* variables.
func runScript(ctx context.Context, c Config, m Message) error {
	b, _ := json.Marshal(m)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Command)
	cmd.Stdin = bytes.NewReader(b)
	cmd.Env = append(cmd.Environ(), "BELUGA_ALERT_KIND="+m.Kind, "BELUGA_ALERT_PROJECT="+m.Project,
		"BELUGA_ALERT_WORKFLOW="+m.Workflow, "BELUGA_ALERT_INSTANCE_ID="+strconv.FormatInt(m.InstanceID, 10),
		"BELUGA_ALERT_SUBJECT="+m.Subject(), "BELUGA_ALERT_TEXT="+m.Text)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("script: %w: %s", err, clip(string(out), 300))
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
