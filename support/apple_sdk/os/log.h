// Stand-in for Apple's os/log.h (see Foundation/Foundation.h): declarations only.
#pragma once

#include <Foundation/Foundation.h>

@protocol OS_os_log <NSObject>
@end
typedef NSObject<OS_os_log>* os_log_t;
extern "C" os_log_t os_log_create(const char* subsystem, const char* category);
#define OS_LOG_DEFAULT nullptr
