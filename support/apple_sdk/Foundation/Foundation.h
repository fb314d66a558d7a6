// Stand-in for Apple's Foundation, standing on Apple's Objective-C runtime headers as the SDK's
// does (objc/NSObject.h: id, BOOL, nil, NSInteger, the NSObject protocol and root class; on Linux
// zig's copy of them, for aarch64-macos). Only the declarations mpsgen's .mm sources and torch's
// MPS headers use, written from Apple's documentation. It declares, it does not implement; the
// macOS cross-build (codegen/verify/macos_build.py) checks that what they name is exported by
// the frameworks. On a Mac the SDK's own headers are used.
#pragma once

#include <limits.h>
#include <objc/NSObject.h>
#include <stddef.h>
#include <stdint.h>

#define NS_ENUM(type, name) enum name : type name; enum name : type
#define NS_OPTIONS(type, name) enum name : type name; enum name : type
#define API_AVAILABLE(...)
#define API_UNAVAILABLE(...)
#define API_DEPRECATED(...)
#define NS_ASSUME_NONNULL_BEGIN
#define NS_ASSUME_NONNULL_END
#define NS_RETURNS_RETAINED __attribute__((ns_returns_retained))

@class NSString, NSError, NSArray<ObjectType>, NSDictionary<KeyType, ObjectType>, NSNumber, NSData;

@protocol NSCopying
- (id)copyWithZone:(struct _NSZone*)zone;
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
