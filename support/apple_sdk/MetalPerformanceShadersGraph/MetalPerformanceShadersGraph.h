// Stand-in for Apple's MetalPerformanceShadersGraph header (see Foundation/Foundation.h):
// the classes torch's MPS headers name, declarations only.
#pragma once

#include <MetalPerformanceShaders/MetalPerformanceShaders.h>

@interface MPSGraphObject : NSObject
@end

@interface MPSGraphType : MPSGraphObject <NSCopying>
@end

@interface MPSGraphShapedType : MPSGraphType
@property(readwrite, copy) MPSShape* shape;
@property(readwrite) MPSDataType dataType;
@end

@interface MPSGraphOperation : MPSGraphObject <NSCopying>
@property(readonly, copy) NSString* name;
@end

@interface MPSGraphTensor : MPSGraphObject <NSCopying>
@property(readonly, copy) MPSShape* shape;
@property(readonly) MPSDataType dataType;
@property(readonly) MPSGraphOperation* operation;
@end

@interface MPSGraphTensorData : MPSGraphObject
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (instancetype)initWithMPSNDArray:(MPSNDArray*)ndarray;
@property(readonly, copy) MPSShape* shape;
@property(readonly) MPSDataType dataType;
- (MPSNDArray*)mpsndarray;
@end

@interface MPSGraphCompilationDescriptor : MPSGraphObject <NSCopying>
@end

@interface MPSGraphExecutionDescriptor : MPSGraphObject
@property(readwrite) BOOL waitUntilCompleted;
@property(readwrite, copy) MPSGraphCompilationDescriptor* compilationDescriptor;
@end

@interface MPSGraph : MPSGraphObject
+ (instancetype)new;
- (MPSGraphTensor*)placeholderWithShape:(MPSShape*)shape dataType:(MPSDataType)dataType name:(NSString*)name;
- (MPSGraphTensor*)constantWithScalar:(double)scalar dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)castTensor:(MPSGraphTensor*)tensor toType:(MPSDataType)type name:(NSString*)name;
@end
