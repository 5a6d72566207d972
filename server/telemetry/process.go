package telemetry

// The process's metrics, named and described as client_golang's
// collectors.NewProcessCollector (v1.25) has them; each OS's file reads
// what that collector read there, and a value it cannot read is left out,
// as the collector left it out.
const (
	processCPUHelp      = "Total user and system CPU time spent in seconds."
	processOpenFDsHelp  = "Number of open file descriptors."
	processMaxFDsHelp   = "Maximum number of open file descriptors."
	processVsizeHelp    = "Virtual memory size in bytes."
	processMaxVsizeHelp = "Maximum amount of virtual memory available in bytes."
	processRSSHelp      = "Resident memory size in bytes."
	processStartHelp    = "Start time of the process since unix epoch in seconds."
	processReceivedHelp = "Number of bytes received by the process over the network."
	processTransmitHelp = "Number of bytes sent by the process over the network."
)
