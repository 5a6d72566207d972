// Package rawio reads and writes files the runtime's poller waits on
// (non-blocking pipes and sockets) without the scheduler's system call
// bookkeeping, which woke the runtime's monitor thread (sysmon) on every
// call a hub on one processor answered.
//
// Go tells its scheduler of every system call (entersyscall), so that a
// call that blocks gives up its processor. When every processor was idle,
// the first system call after it wakes the monitor thread from its deep
// sleep, and the monitor then looks every 20 µs until the process is idle
// again; a call that took longer than its look had its processor handed to
// another thread. At one call in flight the standalone hub's monitor
// thread took two wake-ups and a fifth of the hub's CPU a call, and each
// hand-off one more thread's wake-up (issue 33). A read or write of a
// non-blocking file never blocks, so it needs no bookkeeping: this package
// makes it as a raw system call, and leaves the waiting to the poller
// (syscall.RawConn), which honours the file's deadlines and Close.
//
// Only a file marked Own is read and written raw: one whose open file
// description no other process holds (the hub's ends of its upstreams'
// pipes, a pipe it opened a second time). O_NONBLOCK is the open file
// description's, and another holder of it (a parent sharing an inherited
// stdin, the bridge whose stdin and stdout the shared hub was passed) may
// make it blocking again; a raw read of it would then sleep in the kernel
// unknown to the scheduler, and the collector's next stop of the world
// would wait for it with every goroutine of the process.
//
// What the monitor thread then does not do while it sleeps: take the
// processor from a goroutine that runs for more than 10 ms without
// blocking, allocating enough to start a collection, a timer coming due,
// or a system call of its own. A hub's long runs (a large list, a search
// over thousands of tools) allocate; they may hold the processor longer
// than 10 ms before it is taken.
package rawio
