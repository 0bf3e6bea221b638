import{a,b,c}from"./chunk-ZWAKU6NB.js";import"./chunk-D36JO5BC.js";export{b as Credentials,c as TestOutcome,a as providerWords};
