// Stand-in for libdispatch's header (see Foundation/Foundation.h): declarations only.
#pragma once

#include <Foundation/Foundation.h>

// In Objective-C, dispatch objects are Objective-C objects (OS_OBJECT_USE_OBJC).
@protocol OS_dispatch_object <NSObject>
@end
@protocol OS_dispatch_queue <OS_dispatch_object>
@end
@protocol OS_dispatch_queue_attr <OS_dispatch_object>
@end
typedef NSObject<OS_dispatch_queue>* dispatch_queue_t;
typedef NSObject<OS_dispatch_queue_attr>* dispatch_queue_attr_t;
typedef void (^dispatch_block_t)(void);
@protocol OS_dispatch_data <OS_dispatch_object>
@end
typedef NSObject<OS_dispatch_data>* dispatch_data_t;
#define DISPATCH_DATA_DESTRUCTOR_DEFAULT nullptr
extern "C" dispatch_data_t dispatch_data_create(const void* buffer, size_t size, dispatch_queue_t queue, dispatch_block_t destructor);

#define DISPATCH_QUEUE_SERIAL nullptr
extern "C" {
dispatch_queue_t dispatch_queue_create(const char* label, dispatch_queue_attr_t attr);
void dispatch_sync(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_async(dispatch_queue_t queue, dispatch_block_t block);
void dispatch_retain(NSObject<OS_dispatch_object>* object);
void dispatch_release(NSObject<OS_dispatch_object>* object);
}
