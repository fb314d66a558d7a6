// Stand-in for Apple's Metal framework header (see Foundation/Foundation.h): the protocols,
// classes and functions torch's MPS headers and mpsgen's .mm sources use, declarations only.
#pragma once

#include <Foundation/Foundation.h>
#include <dispatch/dispatch.h>

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  return MTLSize{width, height, depth};
}

typedef NS_OPTIONS(NSUInteger, MTLResourceOptions){
    MTLResourceCPUCacheModeDefaultCache = 0,
    MTLResourceStorageModeShared = 0 << 4,
    MTLResourceStorageModeManaged = 1 << 4,
    MTLResourceStorageModePrivate = 2 << 4,
};
typedef NS_ENUM(NSUInteger, MTLLanguageVersion){
    MTLLanguageVersion3_0 = (3 << 16) + 0,
    MTLLanguageVersion3_1 = (3 << 16) + 1,
    MTLLanguageVersion3_2 = (3 << 16) + 2,
};
typedef NS_ENUM(NSInteger, MTLMathMode){
    MTLMathModeSafe = 0,
    MTLMathModeRelaxed = 1,
    MTLMathModeFast = 2,
};
typedef NS_ENUM(NSUInteger, MTLCommandBufferStatus){
    MTLCommandBufferStatusNotEnqueued = 0, MTLCommandBufferStatusEnqueued = 1,
    MTLCommandBufferStatusCommitted = 2,   MTLCommandBufferStatusScheduled = 3,
    MTLCommandBufferStatusCompleted = 4,   MTLCommandBufferStatusError = 5,
};

@protocol MTLDevice, MTLCommandBuffer, MTLFunction, MTLSharedEvent;

@protocol MTLResource <NSObject>
@property(readonly) id<MTLDevice> device;
@property(copy) NSString* label;
@end

@protocol MTLBuffer <MTLResource>
@property(readonly) NSUInteger length;
- (void*)contents;
@property(readonly) uint64_t gpuAddress;
@end

@protocol MTLFunction <NSObject>
@property(readonly) NSString* name;
@end

@interface MTLCompileOptions : NSObject <NSCopying>
@property(readwrite, nonatomic) BOOL fastMathEnabled;
@property(readwrite, nonatomic) MTLMathMode mathMode;
@property(readwrite, nonatomic) MTLLanguageVersion languageVersion;
@property(readwrite, nonatomic, copy) NSDictionary<NSString*, NSObject*>* preprocessorMacros;
@end

@protocol MTLLibrary <NSObject>
- (id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
@property(readonly) NSArray<NSString*>* functionNames;
@end

@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@property(readonly) id<MTLDevice> device;
@end

@protocol MTLArgumentEncoder <NSObject>
@property(readonly) NSUInteger encodedLength;
- (void)setArgumentBuffer:(id<MTLBuffer>)argumentBuffer offset:(NSUInteger)offset;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
@end

@protocol MTLCommandEncoder <NSObject>
- (void)endEncoding;
@property(copy) NSString* label;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBufferOffset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreads:(MTLSize)threadsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
@end

typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);

@protocol MTLCommandBuffer <NSObject>
- (void)commit;
- (void)waitUntilCompleted;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)encodeSignalEvent:(id<MTLSharedEvent>)event value:(uint64_t)value;
- (void)encodeWaitForEvent:(id<MTLSharedEvent>)event value:(uint64_t)value;
@property(readonly) MTLCommandBufferStatus status;
@property(readonly) NSError* error;
@end

@protocol MTLCommandQueue <NSObject>
- (id<MTLCommandBuffer>)commandBuffer;
- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences;
@property(readonly) id<MTLDevice> device;
@end

@interface MTLSharedEventListener : NSObject
- (instancetype)initWithDispatchQueue:(dispatch_queue_t)dispatchQueue;
@end

typedef void (^MTLSharedEventNotificationBlock)(id<MTLSharedEvent>, uint64_t value);

@protocol MTLSharedEvent <NSObject>
@property uint64_t signaledValue;
- (void)notifyListener:(MTLSharedEventListener*)listener atValue:(uint64_t)value
                 block:(MTLSharedEventNotificationBlock)block;
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytes:(const void*)pointer length:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLLibrary>)newLibraryWithSource:(NSString*)source options:(MTLCompileOptions*)options error:(NSError**)error;
- (id<MTLLibrary>)newLibraryWithData:(dispatch_data_t)data error:(NSError**)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                             error:(NSError**)error;
- (id<MTLSharedEvent>)newSharedEvent;
- (BOOL)supportsFamily:(NSInteger)gpuFamily;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) BOOL hasUnifiedMemory;
@end

@interface MTLCaptureManager : NSObject
+ (MTLCaptureManager*)sharedCaptureManager;
@property(readonly) BOOL isCapturing;
- (void)stopCapture;
@end

extern "C" id<MTLDevice> MTLCreateSystemDefaultDevice(void);
