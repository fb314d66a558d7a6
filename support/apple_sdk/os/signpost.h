// Stand-in for Apple's os/signpost.h (see Foundation/Foundation.h): declarations only.
#pragma once

#include <os/log.h>
#include <time.h>

typedef uint64_t os_signpost_id_t;
typedef uint8_t os_signpost_type_t;
enum : os_signpost_type_t {
  OS_SIGNPOST_EVENT = 0x00,
  OS_SIGNPOST_INTERVAL_BEGIN = 0x01,
  OS_SIGNPOST_INTERVAL_END = 0x02,
};
#define OS_SIGNPOST_ID_NULL ((os_signpost_id_t)0)
#define OS_SIGNPOST_ID_INVALID ((os_signpost_id_t)~0)
#define OS_SIGNPOST_ID_EXCLUSIVE ((os_signpost_id_t)0xEEEEB0B5B2B2EEEE)
extern "C" {
os_signpost_id_t os_signpost_id_generate(os_log_t log);
os_signpost_id_t os_signpost_id_make_with_pointer(os_log_t log, const void* ptr);
bool os_signpost_enabled(os_log_t log);
}
// The SDK's macros take a format string and its arguments.
#define os_signpost_event_emit(log, event_id, name, ...) ((void)(log), (void)(event_id))
#define os_signpost_interval_begin(log, interval_id, name, ...) ((void)(log), (void)(interval_id))
#define os_signpost_interval_end(log, interval_id, name, ...) ((void)(log), (void)(interval_id))

// <time.h> on macOS: nanoseconds of a clock.
#define CLOCK_UPTIME_RAW ((clockid_t)8)
extern "C" uint64_t clock_gettime_nsec_np(clockid_t clock_id);
