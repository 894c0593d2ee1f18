#include "core/learner.h"

#include "core/kernel_learner.h"
#include "core/linear_learners.h"
#include "core/multiclass_learner.h"
#include "core/voted_learner.h"

namespace perceptron {

std::unique_ptr<Learner> MakeLearner(const ModelConfig& config) {
  if (config.multiclass()) return std::make_unique<MulticlassLearner>(config);
  switch (config.algorithm) {
    case Algorithm::kClassic:
      return std::make_unique<ClassicLearner>(config);
    case Algorithm::kMargin:
      return std::make_unique<MarginLearner>(config);
    case Algorithm::kAveraged:
      return std::make_unique<AveragedLearner>(config);
    case Algorithm::kVoted:
      return std::make_unique<VotedLearner>(config);
    case Algorithm::kKernel:
      return std::make_unique<KernelLearner>(config);
  }
  return nullptr;
}

}  // namespace perceptron
