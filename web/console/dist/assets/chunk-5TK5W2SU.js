import{a,b,c}from"./chunk-3W62GJ7U.js";import"./chunk-GUDOVEJD.js";export{b as Credentials,c as TestOutcome,a as providerWords};
