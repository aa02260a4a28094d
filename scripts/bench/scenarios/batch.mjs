export const batchScenarios = [];
