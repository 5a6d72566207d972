package telemetry

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	psapi                     = syscall.NewLazyDLL("psapi.dll")
	kernel32                  = syscall.NewLazyDLL("kernel32.dll")
	procGetProcessMemoryInfo  = psapi.NewProc("GetProcessMemoryInfo")
	procGetProcessHandleCount = kernel32.NewProc("GetProcessHandleCount")
)

// processMemoryCounters is PROCESS_MEMORY_COUNTERS_EX.
type processMemoryCounters struct {
	_                          uint32
	PageFaultCount             uint32
	PeakWorkingSetSize         uintptr
	WorkingSetSize             uintptr
	QuotaPeakPagedPoolUsage    uintptr
	QuotaPagedPoolUsage        uintptr
	QuotaPeakNonPagedPoolUsage uintptr
	QuotaNonPagedPoolUsage     uintptr
	PagefileUsage              uintptr
	PeakPagefileUsage          uintptr
	PrivateUsage               uintptr
}

// gatherProcess reads what client_golang's collector read on Windows: the
// process's times, its private bytes (as virtual memory) and working set
// (as resident memory), and its handles (as open descriptors, of at most
// 16M, Windows' fixed limit). It stopped at the first value it could not
// read, and so does this.
func gatherProcess(g *gatherer) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION|windows.PROCESS_VM_READ, false, uint32(os.Getpid()))
	if err != nil {
		return
	}
	defer windows.CloseHandle(h)
	var start, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &start, &exit, &kernel, &user) != nil {
		return
	}
	g.gauge("process_start_time_seconds", processStartHelp, float64(start.Nanoseconds()/1e9), nil)
	g.counter("process_cpu_seconds_total", processCPUHelp, fileTimeSeconds(kernel)+fileTimeSeconds(user), nil)
	var mem processMemoryCounters
	if r, _, _ := procGetProcessMemoryInfo.Call(uintptr(h), uintptr(unsafe.Pointer(&mem)), unsafe.Sizeof(mem)); r != 1 {
		return
	}
	g.gauge("process_virtual_memory_bytes", processVsizeHelp, float64(mem.PrivateUsage), nil)
	g.gauge("process_resident_memory_bytes", processRSSHelp, float64(mem.WorkingSetSize), nil)
	var handles uint32
	if r, _, _ := procGetProcessHandleCount.Call(uintptr(h), uintptr(unsafe.Pointer(&handles))); r != 1 {
		return
	}
	g.gauge("process_open_fds", processOpenFDsHelp, float64(handles), nil)
	g.gauge("process_max_fds", processMaxFDsHelp, float64(16*1024*1024), nil)
}

func fileTimeSeconds(ft windows.Filetime) float64 {
	return float64(uint64(ft.HighDateTime)<<32+uint64(ft.LowDateTime)) / 1e7
}
