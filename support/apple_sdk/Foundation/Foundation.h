// Stand-in for Apple's Foundation, for check-metal's Objective-C++ parse on Linux
// (codegen/verify/clang_check.py): only the declarations mpsgen's .mm sources and torch's MPS
// headers use, written from Apple's documentation. It declares, it does not implement:
// nothing here is linked or run. On macOS the SDK's own headers are used.
#pragma once

#include <stddef.h>
#include <limits.h>
#include <stdint.h>

typedef bool BOOL;  // arm64 macOS: objc.h's BOOL is bool
#define YES __objc_yes
#define NO __objc_no
#define nil nullptr
#define Nil nullptr

typedef long NSInteger;
typedef unsigned long NSUInteger;
#define NSIntegerMax LONG_MAX
#define NSUIntegerMax ULONG_MAX

#define NS_ENUM(type, name) enum name : type name; enum name : type
#define NS_OPTIONS(type, name) enum name : type name; enum name : type
#define API_AVAILABLE(...)
#define API_UNAVAILABLE(...)
#define API_DEPRECATED(...)
#define NS_ASSUME_NONNULL_BEGIN
#define NS_ASSUME_NONNULL_END
#define NS_RETURNS_RETAINED __attribute__((ns_returns_retained))

@class NSString, NSError, NSArray<ObjectType>, NSDictionary<KeyType, ObjectType>, NSNumber, NSData;

@protocol NSObject
- (instancetype)retain;
- (oneway void)release;
- (instancetype)autorelease;
- (NSUInteger)retainCount;
- (BOOL)isEqual:(id)object;
@property(readonly) NSUInteger hash;
@property(readonly, copy) NSString* description;
@end

@protocol NSCopying
- (id)copyWithZone:(void*)zone;
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
- (id)copy;
- (void)dealloc;
@end

@interface NSString : NSObject <NSCopying>
+ (instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
+ (instancetype)stringWithCString:(const char*)cString encoding:(NSUInteger)enc;
- (instancetype)initWithUTF8String:(const char*)nullTerminatedCString;
@property(readonly) const char* UTF8String;
@property(readonly) NSUInteger length;
@end

@interface NSError : NSObject
@property(readonly, copy) NSString* localizedDescription;
@property(readonly) NSInteger code;
@end

@interface NSNumber : NSObject
+ (NSNumber*)numberWithInt:(int)value;
+ (NSNumber*)numberWithInteger:(NSInteger)value;
+ (NSNumber*)numberWithUnsignedInteger:(NSUInteger)value;
+ (NSNumber*)numberWithLongLong:(long long)value;
+ (NSNumber*)numberWithBool:(BOOL)value;
+ (NSNumber*)numberWithFloat:(float)value;
+ (NSNumber*)numberWithDouble:(double)value;
@property(readonly) int intValue;
@property(readonly) NSInteger integerValue;
@property(readonly) NSUInteger unsignedIntegerValue;
@property(readonly) long long longLongValue;
@property(readonly) double doubleValue;
@property(readonly) float floatValue;
@property(readonly) BOOL boolValue;
@end

@interface NSArray<__covariant ObjectType> : NSObject <NSCopying>
+ (instancetype)arrayWithObjects:(const ObjectType _Nonnull[_Nonnull])objects count:(NSUInteger)cnt;
+ (instancetype)arrayWithObject:(ObjectType)anObject;
+ (instancetype)array;
@property(readonly) NSUInteger count;
- (ObjectType)objectAtIndex:(NSUInteger)index;
- (ObjectType)objectAtIndexedSubscript:(NSUInteger)idx;
@end

@interface NSMutableArray<ObjectType> : NSArray<ObjectType>
+ (instancetype)arrayWithCapacity:(NSUInteger)numItems;
- (void)addObject:(ObjectType)anObject;
- (void)setObject:(ObjectType)obj atIndexedSubscript:(NSUInteger)idx;
@end

@interface NSDictionary<__covariant KeyType, __covariant ObjectType> : NSObject <NSCopying>
+ (instancetype)dictionaryWithObjects:(const ObjectType _Nonnull[_Nonnull])objects
                              forKeys:(const KeyType _Nonnull[_Nonnull])keys
                                count:(NSUInteger)cnt;
@property(readonly) NSUInteger count;
- (ObjectType)objectForKey:(KeyType)aKey;
- (ObjectType)objectForKeyedSubscript:(KeyType)key;
@end

@interface NSMutableDictionary<KeyType, ObjectType> : NSDictionary<KeyType, ObjectType>
- (void)setObject:(ObjectType)anObject forKey:(KeyType)aKey;
- (void)setObject:(ObjectType)obj forKeyedSubscript:(KeyType)key;
@end

@interface NSData : NSObject <NSCopying>
@property(readonly) const void* bytes;
@property(readonly) NSUInteger length;
@end
