// A setup that reads with a trained recognizer (train/finetune.py's export of an account's model,
// docs/models.md): the trained model's recognizer, charset and language model (grown for the
// characters it learned, with the training lines' words among its known words) in place of the
// setup's; the setup's detector, segmenter, print screening, print reader and orientation stay.
import type { ModelSpec } from './model-spec.ts';

export function withTrainedRecognizer(setup: ModelSpec, trained: ModelSpec): ModelSpec {
  return {
    ...setup,
    recognition: trained.recognition,
    languageModel: trained.languageModel,
    recognitionSource: { name: trained.name, version: trained.version },
  };
}
