package gitsync

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// scpLike is Git's short SSH address, [user@]host:path.
var scpLike = regexp.MustCompile(`^(?:([A-Za-z0-9._-]+)@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):([^/\\].*|/.+)$`)

// IsSSH says whether raw is an SSH repository address: ssh://... or
// Git's scp-like [user@]host:path.
func IsSSH(raw string) bool {
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "ssh" || u.Scheme == "git+ssh") {
		return true
	}
	return !strings.Contains(raw, "://") && scpLike.MatchString(raw)
}

// CheckSSHURL refuses an SSH address that names no host or path.
func CheckSSHURL(raw string) error {
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "ssh" || u.Scheme == "git+ssh") {
		if u.Hostname() == "" {
			return fmt.Errorf("url %q has no host", raw)
		}
		if _, set := u.User.Password(); set {
			return fmt.Errorf("url %q carries a password: an SSH binding authenticates with ssh_key", u.Redacted())
		}
		if strings.Trim(u.Path, "/") == "" {
			return fmt.Errorf("url %q names no repository path", raw)
		}
		return nil
	}
	if !scpLike.MatchString(raw) {
		return fmt.Errorf("url %q is not an SSH address (ssh://[user@]host[:port]/path or [user@]host:path)", raw)
	}
	return nil
}

// sshUser is the user an SSH address names ("" none).
func sshUser(raw string) string {
	if u, err := url.Parse(raw); err == nil && (u.Scheme == "ssh" || u.Scheme == "git+ssh") {
		return u.User.Username()
	}
	if m := scpLike.FindStringSubmatch(raw); m != nil {
		return m[1]
	}
	return ""
}

// CheckSSHKey refuses a private key that is not one (PEM or OpenSSH
// format, without a passphrase), never quoting it.
func CheckSSHKey(pem string) error {
	_, err := ssh.ParsePrivateKey([]byte(pem))
	var pass *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &pass):
		return errors.New("ssh_key has a passphrase: give a key without one (it is stored sealed)")
	case err != nil:
		return errors.New("ssh_key is not a private key (PEM or OpenSSH format)")
	}
	return nil
}

// CheckKnownHosts refuses known_hosts text that is neither OpenSSH
// known_hosts lines nor SHA256: fingerprints, naming the line.
func CheckKnownHosts(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("known_hosts is required for an SSH URL: give the server's host key (a line of ssh-keyscan's output) or its SHA256: fingerprint (ssh-keygen -lf)")
	}
	_, _, _, err := parseKnownHosts(text)
	return err
}

// parseKnownHosts splits text into fingerprints and known_hosts lines
// (kept as text for knownhosts), and the key types those lines hold.
func parseKnownHosts(text string) (prints []string, lines []byte, types []string, err error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	var buf bytes.Buffer
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "SHA256:") && !strings.ContainsAny(line, " \t") {
			prints = append(prints, line)
			continue
		}
		_, _, key, _, _, perr := ssh.ParseKnownHosts([]byte(line))
		if perr != nil {
			return nil, nil, nil, fmt.Errorf("known_hosts line %d is neither a known_hosts line (hosts keytype key) nor a SHA256: fingerprint", n)
		}
		types = append(types, key.Type())
		buf.WriteString(line + "\n")
	}
	if len(prints) == 0 && buf.Len() == 0 {
		return nil, nil, nil, errors.New("known_hosts holds no host key nor fingerprint")
	}
	return prints, buf.Bytes(), types, nil
}

// hostKeyCallback accepts a server whose host key is one known_hosts gives
// for its host, or whose key has one of its fingerprints; any other is
// refused, saying which key it showed.
func hostKeyCallback(text string) (ssh.HostKeyCallback, []string, error) {
	prints, lines, types, err := parseKnownHosts(text)
	if err != nil {
		return nil, nil, err
	}
	var known ssh.HostKeyCallback
	if len(lines) > 0 {
		if known, err = knownHostsFrom(lines); err != nil {
			return nil, nil, err
		}
	}
	cb := func(host string, remote net.Addr, key ssh.PublicKey) error {
		fp := ssh.FingerprintSHA256(key)
		if slices.Contains(prints, fp) {
			return nil
		}
		if known != nil {
			err := known(host, remote, key)
			if err == nil {
				return nil
			}
			var ke *knownhosts.KeyError
			if errors.As(err, &ke) && len(ke.Want) > 0 {
				return fmt.Errorf("host key of %s (%s %s) is not the one known_hosts gives: refused (a changed key, or another server)", host, key.Type(), fp)
			}
		}
		return fmt.Errorf("host %s is unknown: its host key (%s %s) is not in the binding's known_hosts; add it (ssh-keyscan) if it is the server's", host, key.Type(), fp)
	}
	var algos []string
	if len(prints) == 0 { // the client asks for the types known_hosts has
		for _, t := range types {
			if t == ssh.KeyAlgoRSA {
				algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256)
			}
			algos = append(algos, t)
		}
	}
	return cb, algos, nil
}

// knownHostsFrom is knownhosts' check of lines, which it reads from a
// file only: a temporary one, read whole and removed at once.
func knownHostsFrom(lines []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "beluga-known-hosts-*")
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(lines)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("known_hosts: %w", werr)
	}
	cb, err := knownhosts.New(f.Name())
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	return cb, nil
}

// auth is the credentials src gives for a remote: an SSH key checked
// against its known hosts, else a user and password.
func auth(src Source) (transport.AuthMethod, error) {
	if IsSSH(src.URL) {
		if src.SSHKey == "" {
			return nil, fmt.Errorf("%s is an SSH URL but the binding has no ssh_key", src.URL)
		}
		user := sshUser(src.URL)
		if user == "" {
			user = src.User
		}
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeys(user, []byte(src.SSHKey), "")
		if err != nil {
			return nil, errors.New("the binding's ssh_key is not a usable private key")
		}
		cb, algos, err := hostKeyCallback(src.KnownHosts)
		if err != nil {
			return nil, err
		}
		keys.HostKeyCallback, keys.HostKeyAlgorithms = cb, algos
		return keys, nil
	}
	if src.User != "" || src.Password != "" {
		return &githttp.BasicAuth{Username: src.User, Password: src.Password}, nil
	}
	return nil, nil
}
