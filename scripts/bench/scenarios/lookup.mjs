export const lookupScenarios = [];
