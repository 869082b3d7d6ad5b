package api

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Hangups tells a server's taken-over event streams (eventLine) that their
// client hung up, so that the hub's sweep reads a flag instead of making a
// system call per stream and tick (peerClosed): one epoll instance is told
// by the kernel when the peer of a watched connection closes it, shuts its
// write side, resets it or the connection fails (EPOLLRDHUP, EPOLLHUP,
// EPOLLERR; not EPOLLIN: bytes a client sends leave it open), and one
// goroutine marks that connection's watch gone, and tells its stream
// (eventLine.OnHangup), which then ends at once. It holds two file
// descriptors (the epoll instance and an eventfd that stops the
// goroutine) and one goroutine, whatever the number of streams.
//
// A stream whose connection could not be watched (not a socket, or the
// kernel refused it), and every stream once Close was called, is peeked
// at on each sweep instead (peerClosed), as without a Hangups. A watch
// that saw its client go stays gone.
//
// cmd/realsyncd makes one per server (api.Config.Hangups) and closes it
// last, once the HTTP server and the hub have stopped; Close may be
// called while streams are watched all the same.
type Hangups struct {
	epfd int           // the epoll instance
	wake int           // eventfd: written by Close, it ends run
	done chan struct{} // closed when run returned
	// stopped: run returned (Close, or epoll_wait failed); the watches
	// learn nothing more and their lines peek
	stopped atomic.Bool

	mu      sync.Mutex
	closed  bool                    // Close was called: epfd is not used any more
	next    uint64                  // the last watch's id
	watches map[uint64]*hangupWatch // by id
}

// hangupWatch is one connection watched by a Hangups, from watch to
// unwatch. Its id, not the connection's file descriptor, names it to the
// epoll instance: a descriptor closed is soon another connection's.
type hangupWatch struct {
	h    *Hangups
	id   uint64
	rc   syscall.RawConn
	gone atomic.Bool // the kernel said the peer hung up
	off  atomic.Bool // unwatched
	// told: what to call once gone (onGone), and whether it was
	told  atomic.Pointer[func()]
	fired atomic.Bool
}

// onGone has f called, once, when the kernel reports the peer's hang-up
// (on the Hangups' goroutine: f must not block), or now when it did. A nil
// watch never calls it.
func (w *hangupWatch) onGone(f func()) {
	if w == nil {
		return
	}
	w.told.Store(&f)
	if w.gone.Load() {
		w.tell()
	}
}

// tell calls the watch's onGone function, once.
func (w *hangupWatch) tell() {
	if f := w.told.Load(); f != nil && !w.fired.Swap(true) {
		(*f)()
	}
}

// wakeID is the eventfd's id with the epoll instance; watches count from 1.
const wakeID = 0

// hangupEvents are the events a watched connection is registered for,
// edge-triggered: each is reported once, when it happens (or at once,
// when the connection is in that state already as it is registered).
// EPOLLHUP and EPOLLERR are reported whether asked for or not.
const hangupEvents = unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR | unix.EPOLLET

// NewHangups creates the epoll instance and starts its goroutine.
func NewHangups() (*Hangups, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEventID(&ev, wakeID)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, err
	}
	h := &Hangups{epfd: epfd, wake: wake, done: make(chan struct{}), watches: make(map[uint64]*hangupWatch)}
	go h.run()
	return h, nil
}

// setEventID stores id as ev's data (epoll_data_t, the Fd and Pad fields).
func setEventID(ev *unix.EpollEvent, id uint64) {
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
}

// eventID is the id setEventID stored in ev.
func eventID(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// run marks gone the watches the epoll instance reports, until Close
// wakes it (or epoll_wait fails, which it does not but for a bug: the
// lines then peek).
func (h *Hangups) run() {
	defer close(h.done)
	defer h.stopped.Store(true)
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(h.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		woken := false
		var gone []*hangupWatch
		h.mu.Lock()
		for i := range events[:n] {
			id := eventID(&events[i])
			if id == wakeID {
				woken = true
			} else if w := h.watches[id]; w != nil {
				w.gone.Store(true)
				gone = append(gone, w)
			}
		}
		h.mu.Unlock()
		for _, w := range gone {
			w.tell()
		}
		if woken {
			return
		}
	}
}

// watch registers c's socket, whose peer may have closed it already (the
// kernel then reports it at once). nil when h is nil or closed, or c
// cannot be watched (not a socket, closed already, refused): its line
// peeks.
func (h *Hangups) watch(c net.Conn) *hangupWatch {
	if h == nil {
		return nil
	}
	rc, _ := rawConn(c)
	if rc == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	w := &hangupWatch{h: h, id: h.next + 1, rc: rc}
	ev := unix.EpollEvent{Events: hangupEvents}
	setEventID(&ev, w.id)
	var ctlErr error
	if err := rc.Control(func(fd uintptr) { ctlErr = unix.EpollCtl(h.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) }); err != nil || ctlErr != nil {
		return nil
	}
	h.next = w.id
	h.watches[w.id] = w
	return w
}

// unwatch removes the connection from the epoll instance: before it is
// closed, while its descriptor is still its own. Once unwatched its line
// peeks (at a closed connection: gone). Idempotent; nil does nothing.
func (w *hangupWatch) unwatch() {
	if w == nil {
		return
	}
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.off.Swap(true) {
		return
	}
	delete(h.watches, w.id)
	if h.closed {
		return // the epoll instance is gone, and its registrations with it
	}
	w.rc.Control(func(fd uintptr) { unix.EpollCtl(h.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
}

// state is what the watch knows: gone when the kernel reported the peer's
// hang-up; known false when it learns nothing any more (unwatched, or its
// Hangups stopped, or nil), and the line must peek.
func (w *hangupWatch) state() (gone, known bool) {
	if w == nil {
		return false, false
	}
	if w.gone.Load() {
		return true, true
	}
	return false, !w.off.Load() && !w.h.stopped.Load()
}

// Close stops the goroutine and closes the epoll instance: the lines
// still watched peek from then on (watch returns nil). Idempotent; nil
// does nothing.
func (h *Hangups) Close() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(h.wake, one[:]); err != nil {
		h.stopped.Store(true) // run may never return: the lines peek
		return err
	}
	<-h.done // at once when run ended before
	unix.Close(h.epfd)
	unix.Close(h.wake)
	return nil
}
