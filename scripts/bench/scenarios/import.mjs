export const importScenarios = [];
