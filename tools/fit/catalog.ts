// Public facts about the DNN models inss knows by name, used where a profile is derived rather
// than measured: parameter counts and GFLOPs (torchvision model cards, the figures in
// data/paper-cluster/README.md), the largest activation of one 224x224 image, and the
// memory rule below. Numbers a user measures on their own GPU always take precedence.

export interface ModelFacts {
  readonly paramsM: number;
  readonly gflops: number;
  /** Elements of the largest activation tensor of one image (fp32), from the architecture. */
  readonly largestActivation: number;
  /** Worker memory without batch-dependent part, as Gpulet's PyTorch prototype reports it (MB), where published. */
  readonly publishedBaseMb?: number;
  /** Kernels per batch in a fused inference engine: measured for the V100 models, else estimated from layer counts. */
  readonly kernels: number;
  readonly kernelsMeasured: boolean;
}

export const MODEL_FACTS: Readonly<Record<string, ModelFacts>> = {
  alexnet: { paramsM: 61, gflops: 0.72, largestActivation: 64 * 55 * 55, kernels: 20, kernelsMeasured: true },
  resnet18: { paramsM: 11.7, gflops: 1.8, largestActivation: 64 * 112 * 112, kernels: 28, kernelsMeasured: false },
  resnet50: {
    paramsM: 25.6,
    gflops: 4.1,
    largestActivation: 256 * 56 * 56,
    publishedBaseMb: 1820,
    kernels: 80,
    kernelsMeasured: true,
  },
  vgg16: {
    paramsM: 138,
    gflops: 15.5,
    largestActivation: 64 * 224 * 224,
    publishedBaseMb: 2920,
    kernels: 24,
    kernelsMeasured: false,
  },
  vgg19: { paramsM: 144, gflops: 19.6, largestActivation: 64 * 224 * 224, kernels: 29, kernelsMeasured: true },
  mnasnet: {
    paramsM: 4.4,
    gflops: 0.33,
    largestActivation: 48 * 112 * 112,
    publishedBaseMb: 1550,
    kernels: 55,
    kernelsMeasured: false,
  },
  mobilenet: {
    paramsM: 5.5,
    gflops: 0.22,
    largestActivation: 64 * 112 * 112,
    publishedBaseMb: 464,
    kernels: 62,
    kernelsMeasured: false,
  },
  efficientnet: { paramsM: 5.3, gflops: 0.39, largestActivation: 96 * 112 * 112, kernels: 82, kernelsMeasured: false },
  ssd: { paramsM: 26.3, gflops: 35, largestActivation: 64 * 300 * 300, kernels: 93, kernelsMeasured: true },
};

/** Framework overhead of one worker process (Gpulet's prototype: PyTorch plus CUDA context). */
export const FRAMEWORK_OVERHEAD_MB = 1230;

/**
 * `m_i(b) = baseMb + perBatchMb * b`, derived: the published batch-independent figure where there is
 * one, else the framework overhead plus four times the fp32 weights (weights, cuDNN workspace and
 * allocator slack); per image, three times the largest fp32 activation (input, output and one
 * buffer in flight).
 */
export function derivedMemory(f: ModelFacts): { baseMb: number; perBatchMb: number } {
  const weightsMb = (f.paramsM * 1e6 * 4) / 2 ** 20;
  const baseMb = f.publishedBaseMb ?? FRAMEWORK_OVERHEAD_MB + 4 * weightsMb;
  const perBatchMb = (3 * f.largestActivation * 4) / 2 ** 20;
  return { baseMb: round(baseMb, 1), perBatchMb: round(perBatchMb, 2) };
}

function round(x: number, digits: number): number {
  const k = 10 ** digits;
  return Math.round(x * k) / k;
}
