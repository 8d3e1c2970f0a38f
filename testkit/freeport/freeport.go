// Package freeport finds free TCP ports on 127.0.0.1 for the servers that
// tests and benchmarks start as child processes (ZooKeeper, MariaDB,
// beluga), which must be told their port before they listen.
//
// The ports are taken below the kernel's ephemeral range when there is
// room: a port picked there and released for a child can be taken, before
// the child binds it, by any outgoing connection or any listener on port 0
// (a fault proxy) in the ephemeral range, which is how a soak's master once
// found its metrics port in use. Below the range only another Take can.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// below is the lowest port Take picks from when the ephemeral range leaves
// room under it.
const below = 10000

// Take reserves n distinct free ports: they are held open together, so no
// two are the same, then released for the processes.
func Take(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := pickRange()
	ports := make([]int, 0, n)
	for range n {
		l, err := listen(lo, hi)
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// One returns one free port.
func One() (int, error) {
	p, err := Take(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// listen binds a random port in [lo, hi), or any port the kernel gives
// when there is no such range or nothing in it is free after some tries.
func listen(lo, hi int) (net.Listener, error) {
	if hi > lo {
		for range 200 {
			p := lo + rand.IntN(hi-lo)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				return l, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// pickRange is [below, the ephemeral range's first port), or empty when the
// range cannot be read or starts too low to leave room.
func pickRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first < below+1000 {
		return 0, 0
	}
	return below, first
}
