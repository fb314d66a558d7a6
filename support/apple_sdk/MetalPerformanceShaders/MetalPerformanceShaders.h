// Stand-in for Apple's MetalPerformanceShaders header (see Foundation/Foundation.h):
// the data types and classes torch's MPS headers name, declarations only.
#pragma once

#include <Metal/Metal.h>

typedef NS_ENUM(uint32_t, MPSDataType){
    MPSDataTypeInvalid = 0,
    MPSDataTypeFloatBit = 0x10000000,
    MPSDataTypeFloat32 = MPSDataTypeFloatBit | 32,
    MPSDataTypeFloat16 = MPSDataTypeFloatBit | 16,
    MPSDataTypeComplexBit = 0x01000000,
    MPSDataTypeComplexFloat32 = MPSDataTypeFloatBit | MPSDataTypeComplexBit | 64,
    MPSDataTypeComplexFloat16 = MPSDataTypeFloatBit | MPSDataTypeComplexBit | 32,
    MPSDataTypeSignedBit = 0x20000000,
    MPSDataTypeIntBit = MPSDataTypeSignedBit,
    MPSDataTypeInt8 = MPSDataTypeSignedBit | 8,
    MPSDataTypeInt16 = MPSDataTypeSignedBit | 16,
    MPSDataTypeInt32 = MPSDataTypeSignedBit | 32,
    MPSDataTypeInt64 = MPSDataTypeSignedBit | 64,
    MPSDataTypeUInt8 = 8,
    MPSDataTypeUInt16 = 16,
    MPSDataTypeUInt32 = 32,
    MPSDataTypeUInt64 = 64,
    MPSDataTypeAlternateEncodingBit = 0x80000000,
    MPSDataTypeBool = MPSDataTypeAlternateEncodingBit | 8,
    MPSDataTypeBFloat16 = MPSDataTypeAlternateEncodingBit | MPSDataTypeFloat16,
};

typedef NSArray<NSNumber*> MPSShape;

@interface MPSKernel : NSObject <NSCopying>
@property(readonly) id<MTLDevice> device;
@end

@interface MPSCommandBuffer : NSObject <MTLCommandBuffer>
+ (instancetype)commandBufferFromCommandQueue:(id<MTLCommandQueue>)commandQueue;
@property(readonly) id<MTLCommandBuffer> commandBuffer;
@property(readonly) id<MTLCommandBuffer> rootCommandBuffer;
- (void)commitAndContinue;
@end

@interface MPSNDArrayDescriptor : NSObject
@property(readwrite) MPSDataType dataType;
@property(readonly) NSUInteger numberOfDimensions;
@end

@interface MPSNDArray : NSObject
@property(readonly) MPSDataType dataType;
@property(readonly) NSUInteger numberOfDimensions;
@property(readonly) id<MTLDevice> device;
- (MPSNDArrayDescriptor*)descriptor;
@end
